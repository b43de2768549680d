package mcptest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestTimedOutWriteKeepsFraming: a request whose write times out part-way
// (the server is not reading stdin) must not corrupt the next message: the
// rest of the first is written first, and the server then reads two whole
// JSON lines.
func TestTimedOutWriteKeepsFraming(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	lines := make(chan string, 10)
	serve := func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
		defer close(lines)
		select {
		case <-release:
		case <-ctx.Done():
			return nil
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		return nil
	}
	s := mcptest.StartServer(t, mcptest.InProcess(serve), mcptest.WithoutHandshake(),
		mcptest.WithPipeCapacity(4096), mcptest.WithTimeout(300*time.Millisecond))
	first := s.Send(wire.MethodToolsCall, map[string]any{"pad": strings.Repeat("x", 20000)})
	if _, err := first.Wait(t.Context()); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped reading stdin") {
		t.Fatalf("first Send into a stdin nobody reads: err = %v, want a timeout saying the server stopped reading stdin", err)
	}
	close(release)
	if err := s.Notify(wire.MethodInitialized, nil); err != nil {
		t.Fatalf("Notify after the timed-out write: %v", err)
	}
	for i, want := range []string{wire.MethodToolsCall, wire.MethodInitialized} {
		var line string
		select {
		case line = <-lines:
		case <-time.After(10 * time.Second):
			t.Fatalf("line %d never reached the server", i+1)
		}
		var m wire.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Method != want {
			t.Errorf("line %d the server read: %.80q… (%d bytes), method %q, err %v; want a whole %s message", i+1, line, len(line), m.Method, err, want)
		}
	}
	if want := int64(len(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"pad":""}}`) + 20000 + 1 + len(`{"jsonrpc":"2.0","method":"notifications/initialized"}`) + 1); s.Stats().StdinBytes != want {
		t.Errorf("Stats().StdinBytes = %d, want %d: every byte of both messages", s.Stats().StdinBytes, want)
	}
}
