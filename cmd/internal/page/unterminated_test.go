package page

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestUnterminatedResponse: a real server, through the proxy, answers with
// a line it never ends (no newline) and exits. The proxy delivered every
// byte of it: the page says so, and that the line has no newline. It said
// "read, not all delivered", looking for the write of the byte after the
// line, its newline, which never came.
func TestUnterminatedResponse(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the server is a sh script")
	}
	const resp = `{"jsonrpc":"2.0","id":1,"result":{}}`
	var ends [3][2]*os.File
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		ends[i] = [2]*os.File{r, w}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var rec bytes.Buffer
	cmd := exec.Command("sh", "-c", "read line; printf '%s' '"+resp+"'")
	p, err := proxy.Start(ctx, cmd, proxy.Streams{Stdin: ends[0][0], Stdout: ends[1][1], Stderr: ends[2][1]}, proxy.Config{Record: &rec})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(ends[1][0]); got <- string(b) }()
	ends[0][1].WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n")
	ends[0][1].Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if out := <-got; out != resp {
		t.Fatalf("the host got %q, want %q", out, resp)
	}
	s, err := Read(&rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Requests) != 1 || s.Requests[0].Response < 0 || !s.Frames[s.Requests[0].Response].Unterminated {
		t.Fatalf("requests %+v: want one, answered by an unterminated line\nrecord:\n%s", s.Requests, rec.String())
	}
	r := s.Requests[0]
	if r.State != "delivered" || r.Delivered == 0 || len(s.Pending) != 0 {
		t.Errorf("the request's state %q, delivered at %d, %d pending; want it delivered", r.State, r.Delivered, len(s.Pending))
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if strings.Contains(text, "not all delivered") || !strings.Contains(text, "no newline") {
		t.Errorf("the summary says the response was not all delivered, or not that its line has no newline:\n%s", text)
	}
}

// TestFrameDeliveredAtItsLastByte: a frame is delivered when the write of
// its last byte returns: the newline after its N bytes, the "\n" of a
// "\r\n" (which may come in the next chunk), the last byte of a line
// without one.
func TestFrameDeliveredAtItsLastByte(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		frame  record.Event
		chunks []record.Event
		want   int64
	}{
		{"newline", record.Event{N: 10}, []record.Event{{Off: 0, N: 10, WT: 5}, {Off: 10, N: 1, WT: 9}}, 9},
		{"crlf", record.Event{N: 10, CRLF: true}, []record.Event{{Off: 0, N: 11, WT: 5}, {Off: 11, N: 1, WT: 9}}, 9},
		{"no newline", record.Event{N: 10, Unterminated: true}, []record.Event{{Off: 0, N: 6, WT: 5}, {Off: 6, N: 4, WT: 9}}, 9},
	} {
		s := New()
		s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName}})
		for _, c := range tc.chunks {
			c.Ev, c.Dir, c.T = record.EvChunk, record.DirOut, c.WT-1
			s.Add(c)
		}
		f := tc.frame
		f.Ev, f.Dir, f.T, f.T0, f.Kind = record.EvFrame, record.DirOut, 8, 1, record.KindNotification
		s.Add(f)
		s.Finish()
		if got := s.Frames[0].Delivered; got != tc.want {
			t.Errorf("%s: delivered at %d, want %d", tc.name, got, tc.want)
		}
	}
}
