package fieldhang_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// docs/replay.md's test, as a user's package has it: the fake as the
// server, a helper child of the test binary, and a record of a field hang
// (testdata/hang.ndjson: the host stopped reading in a 1 MiB result, then
// cancelled it and pinged; made with the naive fake through the proxy, its
// results' text hashed).

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs()) // the flags of `mcpstdio fake`
	})
}

// mcptest.Main serves the helper in its child and runs the tests under goleak.
func TestMain(m *testing.M) { mcptest.Main(m) }

func TestFieldHang(t *testing.T) {
	replay.TestServer(t, mcptest.Helper("fake"), "testdata/hang.ndjson")
}

// TestFieldHangRedOnTheHang: the same test fails on the server that hung
// (the naive fake), with one error whose first line names the rule.
func TestFieldHangRedOnTheHang(t *testing.T) {
	t.Parallel()
	f := &failures{T: t}
	rep := replay.TestServer(f, mcptest.Helper("fake", "-naive"), "testdata/hang.ndjson")
	head, _, _ := strings.Cut(rep.String(), "\n")
	if len(f.errs) != 1 || !strings.HasPrefix(head, "replay: FAIL reads-while-blocked at seq ") || !strings.Contains(f.errs[0], head) {
		t.Errorf("the naive fake: want one error whose first line names reads-while-blocked, got %d:\n%s", len(f.errs), strings.Join(f.errs, "\n"))
	}
}
