package assertions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// rawHost starts the server and drains its stdout, and ends it as its
// close function says: the hosts that get the shutdown wrong.
type rawHost struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	close func(h *rawHost) error
	wg    sync.WaitGroup
	exit  chan struct{} // closed once the server is reaped
}

func newRawHost(end func(h *rawHost) error, hosts *[]*rawHost, mu *sync.Mutex) assertions.HostFactory {
	return func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
		h := &rawHost{cmd: cmd, close: end, exit: make(chan struct{})}
		var err error
		if h.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		mu.Lock()
		*hosts = append(*hosts, h)
		mu.Unlock()
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			io.Copy(io.Discard, out)
			cmd.Wait() // reaps the server however it ends
			close(h.exit)
		}()
		return h, nil
	}
}

func (h *rawHost) CallTool(context.Context, string, map[string]any) (json.RawMessage, error) {
	return nil, errors.New("rawHost calls no tools")
}

func (h *rawHost) Close() error { return h.close(h) }

// waited waits for the server to end, at most d.
func (h *rawHost) waited(d time.Duration) bool {
	select {
	case <-h.exit:
		return true
	case <-time.After(d):
		return false
	}
}

// TestShutdownLadder: shutdown-ladder passes mcptest.Session (stdin closed,
// then SIGTERM, then SIGQUIT after its grace each), warns on a host that
// signals first, and fails one that closes stdin and walks away, naming
// the orphan's pid; all with real processes.
func TestShutdownLadder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("shutdown-ladder reads /proc: Linux only")
	}
	t.Parallel()
	var mu sync.Mutex
	var hosts []*rawHost
	defer func() {
		for _, h := range hosts {
			h.cmd.Process.Kill()
			h.wg.Wait()
		}
	}()
	orphan := func(h *rawHost) error { return h.stdin.Close() }
	signalFirst := func(h *rawHost) error {
		h.cmd.Process.Signal(syscall.SIGTERM)
		if !h.waited(300 * time.Millisecond) {
			h.cmd.Process.Kill()
		}
		h.stdin.Close()
		<-h.exit
		return nil
	}
	cases := []struct {
		name string
		host assertions.HostFactory
		want assertions.Verdict
		says []string
	}{
		{"session", assertions.SessionHost(mcptest.WithGrace(300 * time.Millisecond)), assertions.Pass,
			[]string{"stdin closed at +", "SIGTERM (ignored) at +", "SIGQUIT ended it", "no server process left"}},
		{"signal-first", newRawHost(signalFirst, &hosts, &mu), assertions.Warn,
			[]string{"signal first: SIGTERM (ignored) at +", "killed by a signal it cannot catch (SIGKILL)"}},
		{"orphan", newRawHost(orphan, &hosts, &mu), assertions.Fail,
			[]string{"orphaned", "left pid ", "stdin closed at +", "the criterion killed it"}},
	}
	results := make([]assertions.Result, len(cases))
	concurrently(len(cases), func(i int) {
		rep := assertions.CheckHost(t.Context(), cases[i].host, assertions.HostConfig{Cap: 30 * time.Second, Run: regexp.MustCompile("^shutdown-ladder$")})
		results[i] = rep.Results[len(rep.Results)-1]
	})
	for i, c := range cases {
		res := results[i]
		if res.Verdict != c.want {
			t.Errorf("%s: shutdown-ladder %s, want %s: %s\n%s", c.name, res.Verdict, c.want, res.Evidence, res.Details)
		}
		for _, s := range c.says {
			if !strings.Contains(res.Evidence, s) {
				t.Errorf("%s: evidence %q does not say %q", c.name, res.Evidence, s)
			}
		}
		t.Logf("%s: %s", c.name, res.Line())
	}
	for _, h := range hosts {
		if !h.waited(10 * time.Second) {
			t.Errorf("server pid %d still not reaped", h.cmd.Process.Pid)
		}
	}
}

// patientHost sends initialize and waits for its answer until its context
// ends: a host with no handshake timeout of its own. Answered, it is a host
// that calls no tools.
func patientHost(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &rawHost{cmd: cmd, stdin: in, exit: make(chan struct{}), close: func(h *rawHost) error {
		h.stdin.Close()
		if !h.waited(5 * time.Second) {
			h.cmd.Process.Kill()
		}
		h.wg.Wait()
		return nil
	}}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"patient","version":"0"}}}`+"\n")
	answered := make(chan struct{}, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), `{"jsonrpc":"2.0","id":1,`) {
				answered <- struct{}{}
			}
		}
		cmd.Wait()
		close(h.exit)
	}()
	select {
	case <-answered:
		return h, nil
	case <-ctx.Done():
		h.Close()
		return nil, ctx.Err()
	}
}

// TestHandshakeTimeout: handshake-timeout against a host with no timeout
// (still waiting at the harness's bound: fail, the bound named). Against
// mcptest.Session with its default 10 s timeout (its start on a loaded
// machine must fit in it; it gives up by its own start timeout and cancels
// initialize: pass, saying so) it is TestCheckHostSession's, which waits
// those 10 s once for both.
func TestHandshakeTimeout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		host assertions.HostFactory
		cap  time.Duration
		want assertions.Verdict
		says []string
	}{
		{"patient", patientHost, 2 * time.Second, assertions.Fail,
			[]string{"the fake never answered initialize (id 1)", "the host was still waiting ", "the harness's bound: 2s, HostConfig.Cap"}},
	}
	results := make([]assertions.Result, len(cases))
	concurrently(len(cases), func(i int) {
		rep := assertions.CheckHost(t.Context(), cases[i].host, assertions.HostConfig{Cap: cases[i].cap, Run: regexp.MustCompile("^handshake-timeout$")})
		results[i] = rep.Results[len(rep.Results)-1]
	})
	for i, c := range cases {
		res := results[i]
		if res.Verdict != c.want {
			t.Errorf("%s: handshake-timeout %s, want %s: %s\n%s", c.name, res.Verdict, c.want, res.Evidence, res.Details)
		}
		for _, s := range c.says {
			if !strings.Contains(res.Evidence, s) {
				t.Errorf("%s: evidence %q does not say %q", c.name, res.Evidence, s)
			}
		}
		t.Logf("%s: %s", c.name, res.Line())
	}
}

// listingHost is mcptest.Session's host with its tool list cut to keep
// tools, or failed with refuse.
type listingHost struct {
	assertions.Host
	keep   int
	refuse error
}

func (h listingHost) ListTools(ctx context.Context) ([]string, error) {
	if h.refuse != nil {
		return nil, h.refuse
	}
	names, err := h.Host.(assertions.ToolLister).ListTools(ctx)
	return names[:min(len(names), h.keep)], err
}

// TestLargeToolsListOutcome: large-tools-list says what the host did with
// the list: taken (pass), rejected with its message (warn), truncated
// silently (fail).
func TestLargeToolsListOutcome(t *testing.T) {
	t.Parallel()
	wrap := func(keep int, refuse error) assertions.HostFactory {
		return func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
			h, err := assertions.SessionHost()(ctx, cmd)
			if err != nil {
				return h, err
			}
			return listingHost{h, keep, refuse}, nil
		}
	}
	cases := []struct {
		name string
		host assertions.HostFactory
		want assertions.Verdict
		says string
	}{
		{"taken", wrap(1<<30, nil), assertions.Pass, "taken: a 300000-byte tools/list, all "},
		{"rejected", wrap(0, errors.New("catalog limit: more than 100 tools")), assertions.Warn, "rejected: a 300000-byte tools/list gave the error catalog limit: more than 100 tools"},
		{"truncated", wrap(100, nil), assertions.Fail, "truncated: from a 300000-byte tools/list of "},
	}
	results := make([]assertions.Result, len(cases))
	concurrently(len(cases), func(i int) {
		rep := assertions.CheckHost(t.Context(), cases[i].host, assertions.HostConfig{Run: regexp.MustCompile("^large-tools-list$")})
		results[i] = rep.Results[len(rep.Results)-1]
	})
	for i, c := range cases {
		if res := results[i]; res.Verdict != c.want || !strings.Contains(res.Evidence, c.says) {
			t.Errorf("%s: large-tools-list %s: %s\nwant %s saying %q", c.name, res.Verdict, res.Evidence, c.want, c.says)
		}
	}
}
