package fakeserver

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// PayloadKind is what the big tool's text is made of. Each kind repeats one
// unit; sizes that are not a multiple of the unit are padded with ASCII 'x'.
type PayloadKind string

const (
	// PayloadASCII repeats "x": 1 byte of text, 1 byte on the wire.
	PayloadASCII PayloadKind = "ascii"
	// PayloadMultibyte repeats "é€😀": 9 bytes of UTF-8 (2+3+4), 9 on the
	// wire, 3 runes.
	PayloadMultibyte PayloadKind = "multibyte"
	// PayloadQuotes repeats `"\`: 2 bytes of text, 4 on the wire (`\"\\`).
	PayloadQuotes PayloadKind = "quotes"
	// PayloadNewlines repeats "a\n": 2 bytes of text, 3 on the wire (`a\n`
	// escaped), so a framer that splits on raw newlines is not fooled.
	PayloadNewlines PayloadKind = "newlines"
)

// payloadKinds returns every PayloadKind.
func payloadKinds() []PayloadKind {
	return []PayloadKind{PayloadASCII, PayloadMultibyte, PayloadQuotes, PayloadNewlines}
}

// Layout is where the big tool puts its payload.
type Layout string

const (
	// LayoutText puts the payload in one text content block.
	LayoutText Layout = "text"
	// LayoutBlocks splits the payload over Blocks text content blocks.
	LayoutBlocks Layout = "blocks"
	// LayoutStructured puts the payload in structuredContent.data, with a
	// short fixed text block beside it.
	LayoutStructured Layout = "structured"
)

// BigArgs are the arguments of the big tool, by their JSON names.
//
// With FrameSize set, the whole response line (the JSON-RPC message, without
// its newline) is exactly FrameSize bytes, whatever the request id, era,
// kind or layout: the server measures its envelope and fills the rest. A
// FrameSize below the envelope (about 100 bytes) gets -32602 naming the
// minimum. With Bytes set instead, the payload text is Bytes bytes of UTF-8
// before JSON escaping, spread over the blocks.
type BigArgs struct {
	FrameSize int         `json:"frameSize,omitempty" help:"the exact size of the response line in bytes (instead of bytes)"` // exact size of the response line in bytes; or
	Bytes     int         `json:"bytes,omitempty" help:"bytes of payload text, before JSON escaping"`                         // bytes of payload text (before escaping)
	Kind      PayloadKind `json:"kind,omitempty" help:"ascii (default), multibyte, quotes or newlines"`                       // default PayloadASCII
	Layout    Layout      `json:"layout,omitempty" help:"text (default: one text block), blocks or structured"`               // default LayoutText
	Blocks    int         `json:"blocks,omitempty" help:"text blocks for layout blocks (default 1)"`                          // number of text blocks for LayoutBlocks (default 1)
	ChunkSize int         `json:"chunkSize,omitempty" help:"bytes per stdout write (default 16384)"`                          // bytes per stdout Write (default 16 KiB)
}

// Map returns a as the arguments map of a tools/call request: its non-zero
// fields by their JSON names, as encoding/json decodes them.
func (a BigArgs) Map() map[string]any {
	var m map[string]any
	if err := json.Unmarshal(marshal(a), &m); err != nil {
		panic(fmt.Sprintf("fakeserver: BigArgs.Map: %v", err))
	}
	return m
}

// defaultChunkSize is how many bytes the big tool hands to one stdout Write
// unless told otherwise: 16 KiB, as the Node.js server of the article this
// project grew from writes its 8 MiB response.
const defaultChunkSize = 16 << 10

// maxBig bounds the big tool's frame: 1 GiB.
const maxBig = 1 << 30

// unit returns a kind's repeated unit: raw text and its JSON encoding.
func unit(k PayloadKind) (raw, enc string, ok bool) {
	switch k {
	case PayloadASCII, "":
		return "x", "x", true
	case PayloadMultibyte:
		return "é€😀", "é€😀", true
	case PayloadQuotes:
		return `"\`, `\"\\`, true
	case PayloadNewlines:
		return "a\n", `a\n`, true
	}
	return "", "", false
}

// bigMarker stands for a block's text while the envelope is measured.
const bigMarker = "\x60FAKESERVER-BIG-BODY\x60"

func (s *Server) toolBig(w *work, a BigArgs) (*frame, error) {
	raw, enc, ok := unit(a.Kind)
	if !ok {
		return nil, argError(fmt.Sprintf("big: unknown kind %q (want ascii, multibyte, quotes or newlines)", a.Kind))
	}
	if (a.FrameSize > 0) == (a.Bytes > 0) {
		return nil, argError("big: give exactly one of frameSize and bytes, positive")
	}
	if a.FrameSize > maxBig || a.Bytes > maxBig {
		return nil, argError(fmt.Sprintf("big: at most %d bytes", maxBig))
	}
	layout, blocks := a.Layout, 1
	switch layout {
	case "", LayoutText:
		layout = LayoutText
	case LayoutBlocks:
		blocks = max(a.Blocks, 1)
	case LayoutStructured:
	default:
		return nil, argError(fmt.Sprintf("big: unknown layout %q (want text, blocks or structured)", a.Layout))
	}
	pieces, envelope := bigTemplate(w, layout, blocks)
	texts, err := bigTexts(w, a, envelope, blocks, len(raw), len(enc))
	if err != nil {
		return nil, err
	}
	return bigFrame(w, pieces, texts, enc, cmpOr(a.ChunkSize, defaultChunkSize))
}

// bigTemplate measures the envelope of a big response with a marker for
// each block's text: it returns the envelope split at the markers and its
// size without them.
func bigTemplate(w *work, layout Layout, blocks int) (pieces [][]byte, envelope int) {
	var result map[string]any
	if layout == LayoutStructured {
		result = map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": "big: the payload is in structuredContent.data"}},
			"structuredContent": map[string]any{"data": bigMarker},
		}
	} else {
		content := make([]any, blocks)
		for i := range content {
			content[i] = map[string]any{"type": "text", "text": bigMarker}
		}
		result = map[string]any{"content": content}
	}
	tmpl := resultFrame(w, result).buf
	return bytes.Split(tmpl, []byte(bigMarker)), len(tmpl) - blocks*len(bigMarker)
}

// bigText is one block's text on the wire: units encoded units and filler
// bytes of 'x'.
type bigText struct{ units, filler int }

// bigTexts sizes each block's text so that the response has a.Bytes of
// payload or is a.FrameSize bytes in all; raw and enc are the sizes of one
// unit decoded and encoded.
func bigTexts(w *work, a BigArgs, envelope, blocks, raw, enc int) ([]bigText, error) {
	texts := make([]bigText, blocks)
	total, unitSize := a.Bytes, raw
	if a.FrameSize > 0 {
		total, unitSize = a.FrameSize-envelope, enc
		if total < 0 {
			return nil, argError(fmt.Sprintf("big: frameSize %d is below the %d-byte envelope of this response (id %s, %d blocks)", a.FrameSize, envelope, w.id, blocks))
		}
	}
	size := envelope
	for i := range texts {
		b := total / blocks
		if i < total%blocks {
			b++
		}
		texts[i] = bigText{b / unitSize, b % unitSize}
		size += texts[i].units*enc + texts[i].filler
	}
	if size > maxBig {
		return nil, argError(fmt.Sprintf("big: response of %d bytes is over the %d-byte maximum", size, maxBig))
	}
	return texts, nil
}

// bigFrame writes the texts into the envelope pieces. A cut inside block
// i's text keeps blocks before it whole and ends the frame with buf[be:],
// which closes a text block and the result, so the cut frame is still valid
// JSON with fewer blocks.
func bigFrame(w *work, pieces [][]byte, texts []bigText, enc string, chunk int) (*frame, error) {
	blocks, size := len(texts), 0
	for i, t := range texts {
		size += len(pieces[i]) + t.units*len(enc) + t.filler
	}
	buf := make([]byte, 0, size+len(pieces[blocks]))
	starts := make([]int, blocks) // offset of each block's text in buf
	ends := make([]int, blocks)
	for i, t := range texts {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		buf = append(buf, pieces[i]...)
		starts[i] = len(buf)
		buf = append(buf, bytes.Repeat([]byte(enc), t.units)...)
		buf = append(buf, bytes.Repeat([]byte("x"), t.filler)...)
		ends[i] = len(buf)
	}
	buf = append(buf, pieces[blocks]...)
	bs, be := starts[0], ends[blocks-1]
	u := len(enc)
	cut := func(rel int) int {
		pos := bs + rel
		for i := range starts { // blocks are few compared to bytes; a scan is fine
			if pos < starts[i] { // between blocks: end the body at the next text's start
				return starts[i] - bs
			}
			if pos <= ends[i] {
				r := pos - starts[i]
				if r <= texts[i].units*u {
					r = (r + u - 1) / u * u
				}
				return starts[i] + r - bs
			}
		}
		return be - bs
	}
	return &frame{buf: buf, bodyStart: bs, bodyEnd: be, cut: cut, chunk: chunk}, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
