//go:build unix

package mcptest_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// TestCommandCat runs cat as the "server": it echoes the host's ping back,
// which the host answers as a server request, whose answer cat echoes back
// as the response to the ping.
func TestCommandCat(t *testing.T) {
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skip("no cat on this system")
	}
	s := mcptest.StartServer(t, mcptest.Command("cat"), mcptest.WithoutHandshake())
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
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
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this system")
	}
	// The background process inherits stdout and would outlive cat.
	s := mcptest.StartServer(t, mcptest.Command("sh", "-c", "sleep 1000 & exec cat"),
		mcptest.WithoutHandshake(), mcptest.WithGrace(30*time.Second))
	if err := s.Ping(t.Context()); err != nil {
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
