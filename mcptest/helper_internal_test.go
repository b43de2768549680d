package mcptest

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
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

// TestUnusedHelpers: a registered helper that no test starts is reported.
func TestUnusedHelpers(t *testing.T) {
	RegisterHelper("registered-but-unused", func(context.Context, io.ReadCloser, io.WriteCloser, io.Writer) error { return nil })
	defer func() {
		helpersMu.Lock()
		helpersUsed["registered-but-unused"] = true // Main must not report this test's own
		helpersMu.Unlock()
	}()
	if got := unusedHelpers(); !slices.Contains(got, "registered-but-unused") {
		t.Errorf("unusedHelpers() = %q, want it to list the helper no test started", got)
	}
}
