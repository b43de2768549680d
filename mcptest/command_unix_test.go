//go:build unix

package mcptest_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestCommandCat runs cat as the "server": it echoes the host's ping back.
// The host must not take that for an answer, nor answer the echo (cat would
// echo the answer back as a response): the ping fails at once, saying why.
func TestCommandCat(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skip("no cat on this system")
	}
	s := mcptest.StartServer(t, mcptest.Command("cat"), mcptest.WithoutHandshake())
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "echoes its stdin") {
		t.Fatalf("Ping to cat = %v, want an error saying the server echoes its stdin", err)
	}
	if st := s.Stats(); st.Responses != 0 || st.UnknownIDs != 0 {
		t.Errorf("Stats: Responses %d, UnknownIDs %d; want 0, 0: the echo was answered", st.Responses, st.UnknownIDs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.ServerRequests != 1 || st.Exit.How != "stdin closed" || st.Exit.Code != 0 {
		t.Errorf("Stats: ServerRequests %d, Exit %v; want 1, stdin closed with code 0", st.ServerRequests, st.Exit)
	}
}

// TestCommandGrandchild: a process the server started, still holding the
// server's stdout, dies with it (process group), so stdout ends at once.
func TestCommandGrandchild(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this system")
	}
	// The background process inherits stdout and would outlive cat.
	s := mcptest.StartServer(t, mcptest.Command("sh", "-c", "sleep 1000 & exec cat"),
		mcptest.WithoutHandshake(), mcptest.WithGrace(30*time.Second))
	// cat echoes a notification: once it is back, cat is running.
	if err := s.Notify(wire.MethodInitialized, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNotification(t.Context(), wire.MethodInitialized); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Transcript() {
		if e.Dir == "!" && string(e.Head[:min(len(e.Head), 17)]) == "stdout still open" {
			t.Errorf("stdout stayed open after the server ended: the grandchild survived (%s)", e.Head)
		}
	}
	if st := s.Stats(); st.Exit.How != "stdin closed" {
		t.Errorf("Exit %v, want stdin closed", st.Exit)
	}
}
