package fakeserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestBigExactFrameSize checks that frameSize gives a response line of
// exactly that many bytes for every kind and layout, around a transport
// limit: a framer with that limit accepts size == limit and rejects
// limit+1 as oversized.
func TestBigExactFrameSize(t *testing.T) {
	t.Parallel()
	const limit = 10_000
	layouts := []BigArgs{
		{Layout: LayoutText},
		{Layout: LayoutBlocks, Blocks: 7},
		{Layout: LayoutStructured},
	}
	for _, era := range []string{"modern", "legacy"} {
		r := startRig(t, rigOpt{frameMax: limit, legacy: era == "legacy"})
		for _, kind := range payloadKinds() {
			for _, lay := range layouts {
				for _, size := range []int{limit - 9, limit - 1, limit, limit + 1, limit + 8} {
					a := lay
					a.Kind, a.FrameSize, a.ChunkSize = kind, size, 333
					id := r.tool(ToolBig, a.Map(), nil)
					f, err := r.next()
					var tl *pipes.FrameTooLargeError
					switch {
					case size > limit:
						if !errors.As(err, &tl) || tl.Size != int64(size) {
							t.Errorf("%s %s %s frameSize %d: got %v, want FrameTooLargeError of size %d", era, kind, lay.Layout, size, err, size)
						}
						continue
					case err != nil:
						t.Fatalf("%s %s %s frameSize %d: %v", era, kind, lay.Layout, size, err)
					}
					if len(f) != size {
						t.Errorf("%s %s %s: frame is %d bytes, want %d", era, kind, lay.Layout, len(f), size)
					}
					m, err := wire.ParseMessage(f)
					if err != nil {
						t.Fatalf("%s %s %s: %v", era, kind, lay.Layout, err)
					}
					if got, _ := m.IntID(); got != id {
						t.Errorf("id %d, want %d", got, id)
					}
					checkPayload(t, m, kind, lay)
				}
			}
		}
	}
}

// checkPayload checks that the payload is made of kind's unit (and 'x'
// filler) and sits where the layout says.
func checkPayload(t *testing.T, m *wire.Message, kind PayloadKind, a BigArgs) {
	t.Helper()
	var res struct {
		Content []struct {
			Type, Text string
		}
		StructuredContent struct{ Data string }
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	var payloads []string
	switch a.Layout {
	case LayoutStructured:
		payloads = []string{res.StructuredContent.Data}
	default:
		for _, c := range res.Content {
			payloads = append(payloads, c.Text)
		}
	}
	if a.Layout == LayoutBlocks && len(payloads) != a.Blocks {
		t.Errorf("%d blocks, want %d", len(payloads), a.Blocks)
	}
	raw, _, _ := unit(kind)
	for _, p := range payloads {
		body := strings.TrimRight(strings.ReplaceAll(p, raw, ""), "x")
		if body != "" || !utf8.ValidString(p) || (kind != PayloadASCII && !strings.Contains(p, raw)) {
			t.Errorf("%s payload %.40q… is not made of %q units", kind, p, raw)
		}
	}
}

func TestBigBytes(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{})
	for _, kind := range payloadKinds() {
		for _, n := range []int{1, 9, 1000, 100_001} {
			m := r.callTool(ToolBig, BigArgs{Bytes: n, Kind: kind, Layout: LayoutBlocks, Blocks: 3}.Map())
			if got := len(text(t, m)); got != n {
				t.Errorf("%s bytes %d: text is %d bytes", kind, n, got)
			}
		}
	}
	for _, bad := range []map[string]any{
		{"frameSize": 10},
		{"bytes": 10, "frameSize": 100},
		{},
		{"bytes": 10, "kind": "emoji"},
		{"bytes": 10, "layout": "table"},
	} {
		if m := r.callTool(ToolBig, bad); m.Error == nil || m.Error.Code != wire.CodeInvalidParams {
			t.Errorf("big %v: %+v, want -32602", bad, m)
		}
	}
	m := r.callTool(ToolBig, map[string]any{"frameSize": 10})
	if !strings.Contains(m.Error.Message, "below the") {
		t.Errorf("frameSize below the envelope: message %q does not name the envelope", m.Error.Message)
	}
}

func BenchmarkBig1MiB(b *testing.B) {
	r := startRig(b, rigOpt{})
	args := BigArgs{FrameSize: 1 << 20, Kind: PayloadMultibyte}.Map()
	b.SetBytes(1 << 20)
	for b.Loop() {
		r.tool(ToolBig, args, nil)
		if _, err := r.next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEchoRoundTrip(b *testing.B) {
	r := startRig(b, rigOpt{})
	args := map[string]any{"text": "hello"}
	for b.Loop() {
		r.response(r.tool(ToolEcho, args, nil))
	}
}
