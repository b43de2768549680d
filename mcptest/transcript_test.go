package mcptest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestTranscriptHeadsAndKeptNotifications: the transcript's heads of
// notifications and the kept notifications' params are the server's
// bytes, whether the transcript shares the store's copy of a frame (it
// keeps no more entries than the store keeps notifications) or not, after
// the store's slots have been reused, and after notifications are taken
// and their params overwritten by the test.
func TestTranscriptHeadsAndKeptNotifications(t *testing.T) {
	t.Parallel()
	shapes := []string{
		`{"jsonrpc":"2.0","method":"a","params":{"n":%d}}`,
		`{"jsonrpc":"2.0","method":"b","n":%d}`, // no params
		` {"jsonrpc":"2.0", "method":"c", "params":[%d, "x"]} `,
		`{"jsonrpc":"2.0","method":"d","params":{"long":"` + strings.Repeat("y", 120) + `%d"}}`, // longer than Head
		`{"params":{"n":%d},"jsonrpc":"2.0","method":"e"}`,
		`{"jsonrpc":"2.0","method":"f","params":{"n":%d},"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`, // many members
	}
	var frames []string
	for i := range 5 {
		for _, s := range shapes {
			frames = append(frames, fmt.Sprintf(s, 100+i))
		}
	}
	frames = append(frames, `{"jsonrpc":"2.0","method":"last","params":{"n":1}}`)
	flood := []byte(strings.Join(frames, "\n") + "\n")
	const head = 100
	for _, l := range []mcptest.Limits{
		{Notifications: 8, Transcript: 4, Head: head},  // shared
		{Notifications: 8, Transcript: 8, Head: head},  // shared, as many
		{Notifications: 4, Transcript: 12, Head: head}, // not shared
	} {
		t.Run(fmt.Sprintf("%d-%d", l.Notifications, l.Transcript), func(t *testing.T) {
			ctx := t.Context()
			s := mcptest.StartServer(t, mcptest.InProcess(rawServer(flood)), mcptest.WithoutHandshake(), l)
			// checkTranscript compares the transcript's entries of
			// notifications with the newest frames of the flood.
			checkTranscript := func(when string) {
				t.Helper()
				var got []mcptest.TranscriptEntry
				for _, e := range s.Transcript() {
					if e.Dir == "←" && !bytes.Contains(e.Head, []byte(`"result"`)) {
						got = append(got, e)
					}
				}
				if len(got) == 0 {
					t.Fatalf("%s: no notification in the transcript", when)
				}
				want := frames[len(frames)-len(got):]
				for i, e := range got {
					f := want[i]
					if string(e.Head) != f[:min(len(f), head)] || e.Size != int64(len(f)) {
						t.Errorf("%s: transcript entry %q (%d bytes), want %q (%d bytes)", when, e.Head, e.Size, f[:min(len(f), head)], len(f))
					}
				}
			}
			for range 3 { // the store's slots are reused
				if _, err := s.Call(ctx, "flood", nil); err != nil {
					t.Fatal(err)
				}
			}
			checkTranscript("after the floods")
			last, err := s.WaitNotification(ctx, "last")
			if err != nil {
				t.Fatal(err)
			}
			if string(last.Params) != `{"n":1}` {
				t.Errorf(`WaitNotification("last").Params = %q, want {"n":1}`, last.Params)
			}
			kept := s.TakeNotifications()
			for i, n := range kept {
				f := frames[len(frames)-1-len(kept)+i]
				m, err := wire.ParseMessage([]byte(f))
				if err != nil {
					t.Fatal(err)
				}
				if n.Method != m.Method || !bytes.Equal(n.Params, m.Params) || n.Size != int64(len(f)) || n.Head != nil {
					t.Errorf("kept notification %d: %s %q (%d bytes), want %s %q (%d bytes)", i, n.Method, n.Params, n.Size, m.Method, m.Params, len(f))
				}
			}
			before := s.Transcript()
			for _, p := range append([][]byte{last.Params}, paramsOf(kept)...) {
				for i := range p {
					p[i] = 'X' // the test's own bytes now
				}
			}
			if diff := cmp.Diff(before, s.Transcript()); diff != "" {
				t.Errorf("the transcript changed with the params of notifications taken (-before +after):\n%s", diff)
			}
			checkTranscript("after the notifications were taken")
			if _, err := s.Call(ctx, "flood", nil); err != nil {
				t.Fatal(err)
			}
			checkTranscript("after one more flood")
		})
	}
}

func paramsOf(ns []mcptest.Notification) [][]byte {
	var out [][]byte
	for _, n := range ns {
		out = append(out, n.Params)
	}
	return out
}

// TestFloodOfChangingShapes: a flood whose frames alternate in what
// changes (a counter; the method with it; the method back with another
// value; a frame of another length), across many reads, is kept frame for
// frame as the server wrote it: the reader parses each read's frames where
// they lie and lets them go before the next read.
func TestFloodOfChangingShapes(t *testing.T) {
	t.Parallel()
	const n = 20_000
	var frames []string
	var b strings.Builder
	for i := range n {
		var f string
		switch i % 5 {
		case 0, 1:
			f = fmt.Sprintf(`{"jsonrpc":"2.0","method":"aa","params":{"progress":%d,"total":%d}}`, 10000+i, 10000+i/5)
		case 2:
			f = fmt.Sprintf(`{"jsonrpc":"2.0","method":"bb","params":{"progress":%d,"total":%d}}`, 10000+i, 10000+i/5)
		case 3:
			f = fmt.Sprintf(`{"jsonrpc":"2.0","method":"aa","params":{"progress":%d,"total":%d}}`, 10000+i-1, 10000+i/5+1)
		case 4:
			f = fmt.Sprintf(`{"jsonrpc":"2.0","method":"cc","params":{"n":%d}}`, i)
		}
		frames = append(frames, f)
		b.WriteString(f + "\n")
	}
	s := mcptest.StartServer(t, mcptest.InProcess(rawServer([]byte(b.String()))), mcptest.WithoutHandshake(), mcptest.Limits{Notifications: n}, untilDeadline(t))
	if _, err := s.Call(t.Context(), "flood", nil); err != nil {
		t.Fatal(err)
	}
	kept := s.TakeNotifications()
	if len(kept) != n {
		t.Fatalf("%d notifications kept, want %d (Stats %+v)", len(kept), n, s.Stats())
	}
	for i, k := range kept {
		m, err := wire.ParseMessage([]byte(frames[i]))
		if err != nil {
			t.Fatal(err)
		}
		if k.Method != m.Method || !bytes.Equal(k.Params, m.Params) {
			t.Fatalf("notification %d kept as %s %s, want %s %s", i, k.Method, k.Params, m.Method, m.Params)
		}
	}
}

// TestFramesOneReadEach: frames that each come in a read of their own, at
// the start of the read buffer where the frame before lay, are parsed as
// written: the method changes with the progress, then back with the
// total. A reader that let the Parser compare a frame with what it
// remembered of the one before after the read overwrote it would take the
// second's method for the third.
func TestFramesOneReadEach(t *testing.T) {
	t.Parallel()
	frames := []string{
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":1,"total":1}}`,
		`{"jsonrpc":"2.0","method":"bb","params":{"progress":2,"total":1}}`,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":2,"total":2}}`,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":3,"total":3}}`,
		`{"jsonrpc":"2.0","method":"bb","params":{"progress":4,"total":3}}`,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":4,"total":4}}`,
	}
	sessions := make(chan *mcptest.Session, 1)
	serve := func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
		line, err := bufio.NewReader(in).ReadSlice('\n') // the request
		if err != nil {
			return nil
		}
		req, err := wire.ParseMessage(bytes.TrimSpace(line))
		if err != nil {
			return err
		}
		s := <-sessions
		for i, f := range frames {
			if _, err := io.WriteString(out, f+"\n"); err != nil {
				return err
			}
			for { // until the host has read it: the next frame comes in a read of its own
				ch := s.Changed()
				if s.Stats().Frames > int64(i) {
					break
				}
				select {
				case <-ch:
				case <-ctx.Done():
					return nil
				}
			}
		}
		_, err = fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
		return err
	}
	s := mcptest.StartServer(t, mcptest.InProcess(serve), mcptest.WithoutHandshake(), untilDeadline(t))
	sessions <- s
	if _, err := s.Call(t.Context(), "go", nil); err != nil {
		t.Fatal(err)
	}
	kept := s.TakeNotifications()
	if len(kept) != len(frames) {
		t.Fatalf("%d notifications kept, want %d (Stats %+v)", len(kept), len(frames), s.Stats())
	}
	for i, k := range kept {
		m, err := wire.ParseMessage([]byte(frames[i]))
		if err != nil {
			t.Fatal(err)
		}
		if k.Method != m.Method || !bytes.Equal(k.Params, m.Params) {
			t.Errorf("notification %d kept as %s %s, want %s %s", i, k.Method, k.Params, m.Method, m.Params)
		}
	}
}
