package page

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/record"
)

// TestFaultHoldsAndEndings: a stop fault that held the
// server's stdout for 2 s is counted in the metrics as the fault's, beside
// the proxy's own blocked writes (0 s); the summary says how the server
// ended (a clean exit; killed by the proxy; after a signal passed on),
// not only how many times.
func TestFaultHoldsAndEndings(t *testing.T) {
	t.Parallel()
	code0, code1 := 0, -1
	for _, c := range []struct {
		name   string
		events []record.Event
		want   string
	}{
		{"clean", []record.Event{{Ev: record.EvExit, T: 3e6, Status: "exit status 0", Exit: &code0}}, "terminations 1: exit status 0 (a clean exit)"},
		{"killed", []record.Event{
			{Ev: record.EvClose, T: 2.9e6, Text: "the proxy's context ended: killing the server and closing every pipe", Err: "context canceled"},
			{Ev: record.EvExit, T: 3e6, Status: "killed by SIGKILL", Signal: "SIGKILL", Exit: nil},
		}, "terminations 1: killed by SIGKILL, killed by the proxy (the proxy's context ended: killing the server and closing every pipe)"},
		{"signal", []record.Event{
			{Ev: record.EvSignal, T: 2.9e6, Signal: "SIGTERM", Text: "received by the proxy (from the host, or whoever signalled it) and passed on to the server"},
			{Ev: record.EvExit, T: 3e6, Status: "exit status 1", Exit: &code1},
		}, "terminations 1: exit status 1, after the proxy passed on the SIGTERM it received (from the host, or whoever signalled it)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{Argv: []string{"srv"}}})
			s.Add(record.Event{Ev: record.EvFault, Dir: record.DirOut, T: 1e6, Text: "stopped forwarding", Fault: &record.Fault{Dir: record.DirOut, Kind: "stop"}})
			s.Add(record.Event{Ev: record.EvFault, Dir: record.DirOut, T: 3e6, Text: "resumed", Fault: &record.Fault{Dir: record.DirOut, Kind: "stop"}})
			for _, e := range c.events {
				s.Add(e)
			}
			s.Add(record.Event{Ev: record.EvSummary, T: 3e6 + 1, Metrics: &record.Metrics{Terminations: 1}})
			s.Finish()
			var text, html bytes.Buffer
			if err := s.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := s.WriteHTML(&html, "r"); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"blocked writes: server's stdin 0s, host's stdout 0s, host's stderr 0s\n  held by faults (not in the blocked writes): fault stop on server → host 2s\n",
				c.want + "\n",
			} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("the summary lacks %q:\n%s", want, text.String())
				}
			}
			for _, want := range []string{"<th>held by faults (not in the blocked writes)</th><td>fault stop on server → host 2s</td>", esc(c.want)} {
				if !strings.Contains(html.String(), want) {
					t.Errorf("the report lacks %q", want)
				}
			}
		})
	}
}
