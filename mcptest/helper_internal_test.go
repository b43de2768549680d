package mcptest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHelperWithoutMain: a Helper target in a binary whose TestMain does not
// call Main fails at once with that advice, instead of running the tests in
// the child.
func TestHelperWithoutMain(t *testing.T) {
	was := helpersEnabled.Load()
	helpersEnabled.Store(false)
	defer helpersEnabled.Store(was)
	_, err := Start(t.Context(), Helper("test"))
	if err == nil || !strings.Contains(err.Error(), "does not call mcptest.Main") {
		t.Fatalf("Start(Helper) without Main = %v, want the advice to call mcptest.Main", err)
	}
}

var registerUnused sync.Once

// TestUnusedHelpers: a registered helper that no test starts is reported.
func TestUnusedHelpers(t *testing.T) {
	registerUnused.Do(func() { // once: -count runs the test again in the same process
		RegisterHelper("registered-but-unused", func(context.Context, io.ReadCloser, io.WriteCloser, io.Writer) error { return nil })
		helpersMu.Lock()
		defer helpersMu.Unlock()
		if helpersUsed["registered-but-unused"] {
			t.Error("a helper registered from a _test.go file counts as started: only a library's registration may")
		}
	})
	helpersMu.Lock()
	helpersUsed["registered-but-unused"] = false
	helpersMu.Unlock()
	defer func() {
		helpersMu.Lock()
		helpersUsed["registered-but-unused"] = true // Main must not report this test's own
		helpersMu.Unlock()
	}()
	if got := unusedHelpers(); !slices.Contains(got, "registered-but-unused") {
		t.Errorf("unusedHelpers() = %q, want it to list the helper no test started", got)
	}
}

// TestFoldLines: a run of lines that differ only in numbers is one line
// with a count; others stay as they are.
func TestFoldLines(t *testing.T) {
	var tr []TranscriptEntry
	add := func(dir, head string) {
		tr = append(tr, TranscriptEntry{At: time.Unix(0, 0), Dir: dir, Head: []byte(head), Size: int64(len(head))})
	}
	add("→", `{"id":1,"method":"tools/call"}`)
	for i := range 50 {
		add("←", fmt.Sprintf(`{"method":"notifications/progress","params":{"progress":%d}}`, i))
	}
	add("←", `{"id":1,"result":{}}`)
	got := foldLines(tr, 10)
	if len(got) != 3 || !strings.Contains(got[1], `"progress":49`) || !strings.Contains(got[1], "(× 50 like it") || !strings.Contains(got[2], `"result"`) {
		t.Errorf("foldLines = %q, want the request, the 50 progress lines folded into one, the response", got)
	}
}

// TestCloseLingering: Close gives up on an in-process server that is still
// working after its grace and names it; Main's wait then finds it until it
// returns on its own, and not after.
func TestCloseLingering(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	serve := func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		<-release // working, deaf to its context and pipes
		return nil
	}
	s, err := Start(t.Context(), InProcess(serve), WithGrace(20*time.Millisecond), WithoutHandshake())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "did not return") {
		t.Errorf("Close of a server still working = %v, want it named", err)
	}
	if left := lingering.wait(0); !slices.ContainsFunc(left, func(n string) bool { return strings.Contains(n, "TestCloseLingering") }) {
		t.Errorf("lingering servers %q, want this test's", left)
	}
	close(release)
	if left := lingering.wait(10 * time.Second); slices.ContainsFunc(left, func(n string) bool { return strings.Contains(n, "TestCloseLingering") }) {
		t.Errorf("lingering servers %q after it returned, want none of this test's", left)
	}
}
