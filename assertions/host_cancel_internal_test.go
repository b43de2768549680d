package assertions

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestGiveUpTellsLostCancel: host-timeout's verdict for a host command that
// gave up and ended its server, by what the fake saw. A cancel it read
// passes; one the host wrote but the fake never read, because the host
// ended it first (found unread in its stdin at the signal), passes and says
// so; none at all warns, saying whether the fake's last look at its stdin
// was as it ended (the host had not written one) or at the signal before it
// was killed.
func TestGiveUpTellsLostCancel(t *testing.T) {
	t0 := time.Now()
	call := fakeserver.RequestRecord{ID: "2", Method: wire.MethodToolsCall, Tool: "echo", Arrived: t0, State: fakeserver.StateRunning}
	term := []struct {
		Name    string
		At      time.Time
		Ignored bool
	}{{"SIGTERM", t0.Add(5003 * time.Millisecond), false}}
	cancel := fakeserver.CancelRecord{ID: "2", Reason: "MCP request cancelled by caller", Arrived: t0.Add(5001 * time.Millisecond)}
	o := hostOutcome{ended: t0.Add(5100 * time.Millisecond), exit: "exit status 1", err: errors.New("exit status 1"), output: "timed out"}
	r := &hostFixture{command: &HostCommand{}, cfg: HostConfig{Cap: time.Minute}}
	// The pid of a process that has ended and been reaped.
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	gone := ended.Process.Pid
	for _, c := range []struct {
		name string
		rep  fakeserver.Report
		want Verdict
		says string
	}{
		{"read", fakeserver.Report{Requests: []fakeserver.RequestRecord{call}, Cancels: []fakeserver.CancelRecord{cancel}, Signals: term, Exit: "context cancelled"},
			Pass, "and sent notifications/cancelled 5.001s after the call"},
		{"unread", fakeserver.Report{Requests: []fakeserver.RequestRecord{call}, UnreadCancels: []fakeserver.CancelRecord{cancel}, StdinUnread: 100, Signals: term},
			Pass, `sent notifications/cancelled (reason "MCP request cancelled by caller"), which the server never read: it was still in its stdin when the host ended it (SIGTERM 5.003s after the call)`},
		{"none, looked at its end", fakeserver.Report{Requests: []fakeserver.RequestRecord{call}, Signals: term, Exit: "context cancelled"},
			Warn, "without sending notifications/cancelled: the host ended the server instead (SIGTERM 5.003s after the call), and none was left unread in its stdin when it ended: the host had not written one"},
		{"none, killed after the signal", fakeserver.Report{Requests: []fakeserver.RequestRecord{call}, Signals: term},
			Warn, "without sending notifications/cancelled: the host ended the server instead (SIGTERM 5.003s after the call), and none was unread in its stdin at SIGTERM, its last look before it was killed"},
		{"none, killed before it looked", fakeserver.Report{Requests: []fakeserver.RequestRecord{call}, PID: gone},
			Warn, "without sending notifications/cancelled: the host killed the server before it recorded a signal or its stdin's end"},
		{"none, left running", fakeserver.Report{Requests: []fakeserver.RequestRecord{call}, PID: os.Getpid()},
			Warn, "without sending notifications/cancelled: the server is left working"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := r.judgeGiveUp(c.rep, o, "a call the fake never answers", ruleHostTimeout, Fail)
			says := c.says
			if runtime.GOOS != "linux" && c.want == Warn {
				if c.rep.PID != 0 {
					t.Skip("whether the fake is gone is read from /proc: Linux only")
				}
				says, _, _ = strings.Cut(says, ", and none")
			}
			if res.Verdict != c.want || !strings.Contains(res.Evidence, says) {
				t.Errorf("%s: %s\nwant %s saying %q", res.Verdict, res.Evidence, c.want, says)
			}
		})
	}
}
