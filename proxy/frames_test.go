package proxy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestFramesWhateverTheChunks: a line's frame event (id, method, kind,
// head, hash, redactions) is the same whether it arrives in one piece or in
// pieces of any size: pieces that are all nested string contents skip the
// scanner (frameAsm.content), and must not change what it finds, for lines
// well past the parse limit, malformed ones included.
func TestFramesWhateverTheChunks(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3000)
	lines := []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + long + `"}]}}`,
		`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + long + `"}]},"id":"late"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":{"token":"` + long + `","x":"` + long + `"}}}`,
		`{"jsonrpc":"2.0","id":{"a":"` + long + `"},"method":"m"}`,
		`}{"a":{"id":"` + long + `"},"id":3}`,
		`]]{"x":{"method":"` + long + `"},"method":"real"}`,
		`{"a":[[["` + long + `\"` + long + `\\"]]],"id":"\u0069d","method":"tools/call"}`,
		`{"id":"` + long + `","method":"` + long + `"}`,
		`{"x":"` + long + `,"id":5}`,
		`not json at all ` + long,
	}
	pol, err := newRedactPolicy(DefaultRedactKeys, []string{"params.data.x"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{HeadBytes: 64, ParseLimit: 100}
	frames := func(line string, piece func() int) []record.Event {
		a := newFrameAsm(cfg, pol)
		var evs []record.Event
		done := func(a *frameAsm, _ time.Time) {
			ev, _ := a.frame(record.DirOut, false)
			evs = append(evs, ev)
		}
		b := []byte(line + "\n" + line + "\n")
		for len(b) > 0 {
			n := min(piece(), len(b))
			a.startChunk()
			a.feed(b[:n], time.Time{}, done)
			b = b[n:]
		}
		return evs
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, line := range lines {
		whole := frames(line, func() int { return len(line) + 1 })
		for _, size := range []int{1, 7, 64, 1000} {
			if diff := cmp.Diff(whole, frames(line, func() int { return size })); diff != "" {
				t.Errorf("line %d in pieces of %d bytes (-whole +pieces):\n%s", i, size, diff)
			}
		}
		got := frames(line, func() int { return 1 + rng.IntN(2000) })
		if diff := cmp.Diff(whole, got); diff != "" {
			t.Errorf("line %d in pieces of random sizes (-whole +pieces):\n%s", i, diff)
		}
		if i == 0 && (len(whole) != 2 || string(whole[0].ID) != "7" || !whole[0].Scanned) {
			t.Errorf("line 0: frames %s, want two scanned responses to id 7", fmt.Sprint(whole))
		}
	}
}

// TestGapResponse: a line whose middle was lost is a response to its id
// when what was seen says so (its start, a top-level id and no method, the
// gap inside its result or error); otherwise it stays a gap of unknown
// kind.
func TestGapResponse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name, head, tail string
		lostFirst        bool
		id, kind         string
	}{
		{"result", `{"jsonrpc":"2.0","id":7,"result":{"text":"` + long, long + `"}}`, false, "7", record.KindResponse},
		{"error", `{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"` + long, long + `"}}`, false, `"a"`, record.KindError},
		{"short line", `{"id":8,"result":"`, `"}`, false, "8", record.KindResponse},
		{"start lost", `{"jsonrpc":"2.0","id":7,"result":{"text":"` + long, long + `"}}`, true, "", ""},
		{"a request", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"` + long, long + `"}}`, false, "", ""},
		{"gap in params", `{"jsonrpc":"2.0","id":7,"params":{"a":"` + long, long + `"},"method":"m"}`, false, "", ""},
		{"gap in the id", `{"jsonrpc":"2.0","id":"` + long, long + `","result":1}`, false, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newFrameAsm(Config{HeadBytes: 64, ParseLimit: 100}, &redactPolicy{})
			var evs []record.Event
			done := func(a *frameAsm, _ time.Time) {
				ev, _ := a.frame(record.DirOut, false)
				evs = append(evs, ev)
			}
			if c.lostFirst {
				a.lost(10)
			}
			a.feed([]byte(c.head), time.Time{}, done)
			a.lost(1000)
			a.feed([]byte(c.tail+"\n"), time.Time{}, done)
			if len(evs) != 1 {
				t.Fatalf("%d frames, want 1", len(evs))
			}
			ev := evs[0]
			if !ev.Gap || string(ev.ID) != c.id || ev.Kind != c.kind {
				t.Errorf("frame gap %v, id %s, kind %q; want gap, id %s, kind %q", ev.Gap, ev.ID, ev.Kind, c.id, c.kind)
			}
		})
	}
}
