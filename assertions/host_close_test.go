package assertions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// lockedHost writes one message at a time under a lock and sends the
// cancel of a call its context abandoned by itself: on a goroutine of its
// own (go-sdk v1.8.0's shape), or before the call returns (inline, v1.7.0's).
// Close waits for the writes in flight before it closes the server's stdin,
// so a cancel blocked on a full pipe holds it up.
type lockedHost struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	inline bool
	wmu    sync.Mutex
	writes sync.WaitGroup
	read   sync.WaitGroup
	id     int
}

func newLockedHost(inline bool) assertions.HostFactory {
	return func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
		h := &lockedHost{cmd: cmd, inline: inline}
		var err error
		if h.in, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		h.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"locked","version":"0"}}}`)
		r := bufio.NewReader(out)
		if _, err := r.ReadBytes('\n'); err != nil {
			return h, fmt.Errorf("reading the initialize answer: %w", err)
		}
		h.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		h.read.Add(1)
		go func() { defer h.read.Done(); io.Copy(io.Discard, r) }()
		return h, nil
	}
}

func (h *lockedHost) write(line string) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, err := io.WriteString(h.in, line+"\n")
	return err
}

func (h *lockedHost) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	h.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.id, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	if err := h.write(string(b)); err != nil {
		return nil, err
	}
	<-ctx.Done() // the fake never answers
	cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"abandoned"}}`, h.id)
	if h.inline {
		h.write(cancel)
		return nil, ctx.Err()
	}
	h.writes.Add(1)
	go func() { defer h.writes.Done(); h.write(cancel) }()
	return nil, ctx.Err()
}

func (h *lockedHost) Close() error {
	h.writes.Wait()
	h.in.Close()
	h.cmd.Process.Kill()
	h.read.Wait()
	return h.cmd.Wait()
}

// TestCloseBounded: close-bounded passes mcptest.Session, whose cancel goes
// out on its own and whose Close closes stdin under a blocked write, and
// fails a host whose Close waits for that write, and one whose call waits
// for it, naming where they wait and the pipe's fill.
func TestCloseBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fake fills its stdin pipe through /proc: Linux only")
	}
	t.Parallel()
	cases := []struct {
		name string
		host assertions.HostFactory
		want assertions.Verdict
		says []string
	}{
		{"session", assertions.SessionHost(mcptest.WithGrace(time.Second)), assertions.Pass,
			[]string{"the call the host abandoned returned ", "Close, 200ms later, returned after ", "stdin pipe holding "}},
		{"close waits for the cancel", newLockedHost(false), assertions.Fail,
			[]string{"Close did not return within 2s", "stdin pipe holding ", "(*lockedHost).Close", "(*lockedHost).CallTool.func1", "returned once the criterion killed the fake"}},
		{"call waits for the cancel", newLockedHost(true), assertions.Fail,
			[]string{"CallTool did not return ", "stdin pipe holding ", "(*lockedHost).CallTool"}},
	}
	results := make([]assertions.Result, len(cases))
	concurrently(len(cases), func(i int) {
		rep := assertions.CheckHost(t.Context(), cases[i].host, assertions.HostConfig{Within: 2 * time.Second, Run: regexp.MustCompile("^close-bounded$")})
		results[i] = rep.Results[len(rep.Results)-1]
	})
	for i, c := range cases {
		res := results[i]
		if res.Verdict != c.want {
			t.Errorf("%s: close-bounded %s, want %s: %s\n%s", c.name, res.Verdict, c.want, res.Evidence, res.Details)
		}
		for _, s := range c.says {
			if !strings.Contains(res.Evidence, s) {
				t.Errorf("%s: evidence %q does not say %q", c.name, res.Evidence, s)
			}
		}
		if m := regexp.MustCompile(`holding (\d+) of (\d+) bytes`).FindStringSubmatch(res.Evidence); m != nil && m[1] == "0" {
			t.Errorf("%s: the pipe was not filled: %s", c.name, res.Evidence)
		}
		t.Logf("%s: %s", c.name, res.Line())
	}
}
