package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

func init() { mcptest.RegisterHelper("answer-on", answerOnServer) }

// answerOnServer reads lines until stdin ends; on a line "go" it writes a
// response to id 1 of SIZE bytes, newline included, in one write. Args:
// SIZE.
func answerOnServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	size, _ := strconv.Atoi(mcptest.HelperArgs()[0])
	resp := bytes.Repeat([]byte("x"), size)
	copy(resp, `{"jsonrpc":"2.0","id":1,"result":{"text":"`)
	copy(resp[size-4:], `"}}`+"\n")
	r := bufio.NewReader(stdin)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil
		}
		if strings.TrimSpace(line) == "go" {
			if _, err := stdout.Write(resp); err != nil {
				return err
			}
		}
	}
}

// TestExitVerdictLostDetail: when the observer lost the server's output
// after a request was written (here it had no time left for the response
// at the end), the server's exit is not said to leave that request
// unanswered: its response may have passed unseen, and the verdict says
// so; the gap chunk events that stand for the lost bytes say when their
// writes had returned, so the response is not shown undelivered.
func TestExitVerdictLostDetail(t *testing.T) {
	// Not parallel: it finds its proxy's Wait in finish by the goroutines'
	// stacks (see TestEndLostAtExitMarked).
	const size = 1 << 20
	r := startRig(t, helperCmd(t, "answer-on", strconv.Itoa(size)), proxy.Config{ExitGrace: time.Nanosecond, ObserverBuffer: 64 << 20})
	drain(t, r.stderr)
	io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big"}}`+"\n")
	r.rec.wait(t, "the request", func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 })
	// The observer gets stuck writing a line the server ignores; then the
	// server answers, and the observer sees none of it.
	held := r.rec.block()
	defer r.rec.unblock()
	io.WriteString(r.stdin, "wait\n")
	select {
	case <-held:
	case <-time.After(bound(t)):
		t.Fatalf("the observer wrote nothing within %v", bound(t))
	}
	io.WriteString(r.stdin, "go\n")
	if n, err := io.CopyN(io.Discard, r.stdout, size); n != size {
		t.Fatalf("the host got %d bytes of the response (%v), want %d", n, err, size)
	}
	r.stdin.Close()
	ended := make(chan *proxy.Result, 1)
	go func() { ended <- r.wait() }()
	waitStack(t, "proxy.(*observer).finish(", "select")
	r.rec.unblock()
	res := <-ended
	for _, v := range res.Verdicts {
		if v.Kind == record.VerdictExited && strings.Contains(v.Text, "unanswered") {
			t.Errorf("verdict %q: the response may have passed unseen, not unanswered", v.Text)
		}
	}
	found := false
	for _, v := range res.Verdicts {
		found = found || v.Kind == record.VerdictExited && strings.Contains(v.Text, "may have passed unseen") && strings.Contains(v.Text, "id 1 (tools/call big)")
	}
	if !found {
		t.Errorf("verdicts %+v: want the exit to name id 1's response as possibly unseen", res.Verdicts)
	}
	var covered int64
	for _, e := range r.rec.all() {
		if e.Ev == record.EvChunk && e.Dir == record.DirOut {
			if e.WT == 0 {
				t.Errorf("chunk event %+v: no time its write returned, though the host got every byte", e)
			}
			covered += e.N
		}
	}
	if covered != size {
		t.Errorf("out chunk events cover %d bytes, want %d", covered, size)
	}
}
