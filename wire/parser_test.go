package wire_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/wire"
)

// parseBoth parses frame with p and with ParseMessageInto, and reports any
// difference.
func parseBoth(t *testing.T, p *wire.Parser, frame []byte) {
	t.Helper()
	var got, want wire.Message
	gerr := p.Parse(&got, frame)
	werr := wire.ParseMessageInto(&want, frame)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("Parser.Parse(%q) = %v; ParseMessageInto says %v", frame, gerr, werr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Parser.Parse(%q) mismatch (-ParseMessageInto +Parser):\n%s", frame, diff)
	}
	checkParamsAt(t, p, frame, &got, gerr)
}

// checkParamsAt checks what p.ParamsAt says of the Parse of frame that gave
// m and err: the very bytes of m.Params, or -1.
func checkParamsAt(t *testing.T, p *wire.Parser, frame []byte, m *wire.Message, err error) {
	t.Helper()
	at := p.ParamsAt()
	switch {
	case err != nil || m.Params == nil:
		if at != -1 {
			t.Fatalf("Parser.ParamsAt() = %d after Parse(%q) gave no params (err %v)", at, frame, err)
		}
	case at >= 0:
		if at+len(m.Params) > len(frame) || &frame[at] != &m.Params[0] {
			t.Fatalf("Parser.ParamsAt() = %d after Parse(%q), whose params %q are not there", at, frame, m.Params)
		}
	case m.Error == nil && bytes.Count(frame, []byte(`":`)) < 8:
		t.Fatalf("Parser.ParamsAt() = -1 after Parse(%q), a message with params", frame)
	}
}

// TestParserParamsAt: a flood's params are found in its frames, on the
// shortcut for frames like the last one and off it, and none are claimed
// for a frame that has none or is not a message.
func TestParserParamsAt(t *testing.T) {
	var p wire.Parser
	frames := []string{
		`{"jsonrpc":"2.0","method":"m","params":{"a":1}}`,
		`{"jsonrpc":"2.0","method":"m","params":{"a":2}}`, // the shortcut
		`{"jsonrpc":"2.0","method":"m","params":{"a":3}}`,
		` {"jsonrpc":"2.0", "method":"m", "params" : [1,2,3] } `,
		`{"jsonrpc":"2.0","method":"m"}`,
		`{"jsonrpc":"2.0","method":"m","params":{"a":4}`, // invalid
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`,
		`{"params":{"a":5},"jsonrpc":"2.0","method":"m"}`,
		`{"params":{"a":6},"jsonrpc":"2.0","method":"m"}`,
	}
	for _, f := range frames {
		frame := []byte(f)
		var m wire.Message
		err := p.Parse(&m, frame)
		checkParamsAt(t, &p, frame, &m, err)
	}
}

// parseHeld parses frames with p.ParseHeld, as a reader does the frames of
// one read where they lie in its buffer, then releases them and overwrites
// their bytes: each result must be ParseMessageInto's, and nothing p
// remembers may be what was overwritten (the next parse shows it). With
// plain, the last frame is parsed with Parse instead, with the ones before
// still in place, and released by it.
// parseLike parses frames, held one after the other in one buffer, as the
// host's reader does: each with ParseLike first, and with ParseHeld when it
// reports false. Either way the result must be ParseMessageInto's; a frame
// ParseLike takes holds a newline or a carriage return only where the
// frame before did, and one it refuses is left as it was for ParseHeld.
// It returns how many it took.
func parseLike(t *testing.T, p *wire.Parser, frames [][]byte) int {
	t.Helper()
	var buf []byte
	for _, f := range frames {
		buf = append(buf, f...)
	}
	took := 0
	var last []byte
	for _, f := range frames {
		frame := buf[:len(f):len(f)]
		buf = buf[len(f):]
		var got, want wire.Message
		werr := wire.ParseMessageInto(&want, f)
		gerr := error(nil)
		if p.ParseLike(&got, frame) {
			took++
			if werr != nil {
				t.Fatalf("Parser.ParseLike(%q) took a frame ParseMessageInto refuses: %v", f, werr)
			}
			for i, c := range frame {
				if (c == '\n' || c == '\r') && (len(last) != len(frame) || last[i] != c) {
					t.Fatalf("Parser.ParseLike(%q) took a frame with %q at %d, after %q", f, c, i, last)
				}
			}
		} else {
			if diff := cmp.Diff(wire.Message{}, got); diff != "" {
				t.Fatalf("Parser.ParseLike(%q) refused it but changed m:\n%s", f, diff)
			}
			gerr = p.ParseHeld(&got, frame)
		}
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("Parser.ParseHeld(%q) = %v; ParseMessageInto says %v", f, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Parser.ParseLike or ParseHeld(%q) mismatch (-ParseMessageInto +Parser):\n%s", f, diff)
		}
		checkParamsAt(t, p, frame, &got, gerr)
		last = frame
	}
	p.Release()
	return took
}

// TestParserParseLike: a flood's frames are taken, one that is not like the
// last (another length, or a newline where the last had none, as bytes
// that run past a frame into the next) is refused and parsed as usual.
func TestParserParseLike(t *testing.T) {
	var frames [][]byte
	for i := range 30 {
		frames = append(frames, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d,"total":99,"message":"step %d"}}`, 10+i, 10+i))
	}
	n := len(frames[0])
	short := []byte(`{"jsonrpc":"2.0","method":"x"}`)
	run := append(append(append([]byte(nil), short...), '\n'), frames[0]...)[:n] // as many bytes as a frame, a newline among them
	frames = append(frames, run, short, frames[1], frames[2], frames[3])
	var p wire.Parser
	// Taken: the flood's frames after its first two (the first is checked
	// whole, the second finds what changes), and the last of the three
	// after short, for the same reasons.
	if took := parseLike(t, &p, frames); took != 28+1 {
		t.Errorf("ParseLike took %d frames, want %d", took, 28+1)
	}
}

func parseHeld(t *testing.T, p *wire.Parser, frames [][]byte, plain bool) {
	t.Helper()
	var buf []byte
	for _, f := range frames {
		buf = append(buf, f...)
	}
	all := buf
	for i, f := range frames {
		frame := buf[:len(f):len(f)]
		buf = buf[len(f):]
		var got, want wire.Message
		var gerr error
		if plain && i == len(frames)-1 {
			gerr = p.Parse(&got, frame)
		} else {
			gerr = p.ParseHeld(&got, frame)
		}
		werr := wire.ParseMessageInto(&want, f)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("Parser.ParseHeld(%q) = %v; ParseMessageInto says %v", f, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Parser.ParseHeld(%q) mismatch (-ParseMessageInto +Parser):\n%s", f, diff)
		}
		checkParamsAt(t, p, frame, &got, gerr)
	}
	if !plain {
		p.Release()
	}
	const junk = `x{}"1,:\`
	for i := range all { // the caller reuses its buffer
		all[i] = junk[i%len(junk)]
	}
}

// TestParserHeld parses runs of a flood's frames, and the other runs of
// TestParserSameShape, with ParseHeld, released after runs of every length
// up to 5, and with Parse after ParseHeld.
func TestParserHeld(t *testing.T) {
	flood := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d,"total":99,"message":"step %d of %s"}}`
	var frames []string
	for i := range 40 {
		word := "the job!"
		if i%13 == 12 {
			word = `the\"job` // as long, with an escape
		}
		if i%17 == 16 {
			word = `the \job` // as long, and invalid
		}
		frames = append(frames, fmt.Sprintf(flood, 10+i%7, 10+i*3%89, word))
	}
	for _, run := range sameShapeRuns {
		frames = append(frames, run...)
		frames = append(frames, run...)
	}
	// The method changes with the progress, then changes back with the
	// total: a Parser that compared the third with what it remembered of
	// the first would take the second's method.
	frames = append(frames,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":1,"total":1}}`,
		`{"jsonrpc":"2.0","method":"bb","params":{"progress":2,"total":1}}`,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":2,"total":2}}`,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":3,"total":3}}`,
		`{"jsonrpc":"2.0","method":"bb","params":{"progress":4,"total":3}}`,
		`{"jsonrpc":"2.0","method":"aa","params":{"progress":4,"total":4}}`,
	)
	for n := 1; n <= 5; n++ {
		for _, plain := range []bool{false, true} {
			var p wire.Parser
			for i := 0; i < len(frames); i += n {
				var run [][]byte
				for _, f := range frames[i:min(i+n, len(frames))] {
					run = append(run, []byte(f))
				}
				parseHeld(t, &p, run, plain)
			}
		}
	}
}

// TestParserSequences parses runs of frames that share beginnings of every
// length, valid and not, with one Parser: each result must be
// ParseMessageInto's.
func TestParserSequences(t *testing.T) {
	base := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d,"total":9,"message":"step %d"}}`,
		`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%d"}],"isError":false}}`,
		`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%d"]}}`, // invalid JSON
		`{"jsonrpc":"2.0","id":%d,"id":%d,"result":{}}`,                               // duplicate key
		` { "jsonrpc" : "2.0" , "method" : "m" , "params" : [ %d , [ %d , { } ] ] } `,
		`{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat("[", 70) + "%d,%d" + strings.Repeat("]", 70) + `}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":%d,"jsonrpc":"2.0","id":%d,"result":{}}`,
		`[%d,%d]`,
		`{"jsonrpc":"2.0","method":"m","params":{"long":"` + strings.Repeat("x", 1500) + `%d","n":%d}}`,
	}
	var p wire.Parser
	for round := range 3 {
		for i, a := range base {
			for _, b := range base[i:] {
				for j := range 12 {
					parseBoth(t, &p, fmt.Appendf(nil, a, j, j*round))
					parseBoth(t, &p, fmt.Appendf(nil, b, j*7, j))
				}
			}
		}
	}
	// Every cut of one frame after the whole of it: each shares all its bytes.
	whole := []byte(fmt.Sprintf(base[0], 1, 2))
	for n := len(whole); n >= 0; n-- {
		parseBoth(t, &p, whole)
		parseBoth(t, &p, whole[:n])
	}
}

// TestParserSameShape parses runs of frames of one length and shape that
// differ only in one value, the one a Parser gives the last message's
// envelope for unless it is "jsonrpc", "method" or inside "error": each
// result must be ParseMessageInto's, valid or not.
func TestParserSameShape(t *testing.T) {
	for _, run := range sameShapeRuns {
		var p wire.Parser
		for range 2 {
			for _, frame := range run {
				parseBoth(t, &p, []byte(frame))
				parseBoth(t, &p, []byte(frame)) // the same frame again
			}
		}
	}
}

var sameShapeRuns = [][]string{
	{ // a flood: the params change, then the method, then the version
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"message":"step 1"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2,"message":"step 2"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":3,"message":"step 3"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progresz","params":{"progress":3,"message":"step 3"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progresz","params":{"progress":4,"message":"step 4"}}`,
		`{"jsonrpc":"2.1","method":"notifications/progresz","params":{"progress":4,"message":"step 4"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progresz","params":{"progress":5,"message":"step 5"}}`,
		`{"jsonrpc":"2.0","method":"notifications/\u0070rogress","params":{"progress":5,"message":"s"}}`,
		`{"jsonrpc":"2.0","method":"notifications/\u0070rogress","params":{"progress":6,"message":"s"}}`,
	},
	{ // responses: the id and the result change
		`{"jsonrpc":"2.0","id":10,"result":{"n":1}}`,
		`{"jsonrpc":"2.0","id":11,"result":{"n":2}}`,
		`{"jsonrpc":"2.0","id":12,"result":{"n":3}}`,
		`{"jsonrpc":"2.0","id":"1","result":{"n":3}}`,
		`{"jsonrpc":"2.0","id":"2","result":{"n":4}}`,
		`{"jsonrpc":"2.0","id":null,"result":{"n":4}}`,
		`{"jsonrpc":"2.0","id":1234,"result":{"n":4}}`,
		`{"jsonrpc":"2.0","id":null,"result":{"n":4}}`, // no longer a response
		`{"jsonrpc":"2.0","id":1235,"result":{"n":4}}`,
		`{"jsonrpc":"2.0","id":1235,"result":null}`,
		`{"jsonrpc":"2.0","id":1236,"result":true}`,
	},
	{ // errors: decoded, so never taken from the frame before
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no 1"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"no 2"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"no 2"}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"no 3"}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"no\u0003"}}`,
	},
	{ // requests, and a member the envelope does not know
		`{"jsonrpc":"2.0","id":1,"method":"ping","x":1}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","x":2}`,
		`{"jsonrpc":"2.0","id":2,"method":"pong","x":2}`,
		`{"jsonrpc":"2.0","id":3,"method":"pong","x":3}`,
		`{"jsonrpc":"2.0","id":3,"method":"pong","x":"3"}`,
		`{"jsonrpc":"2.0","id":true,"method":"pong","x":"3"}`,
	},
	{ // the only value that changes is not the envelope's: then the version
		`{"x":"a","jsonrpc":"2.0","method":"m"}`,
		`{"x":"b","jsonrpc":"2.0","method":"m"}`,
		`{"x":"b","jsonrpc":"2.x","method":"m"}`,
		`{"x":"c","jsonrpc":"2.x","method":"m"}`,
	},
}

func FuzzParser(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"m","params":{"a":[1,2]}}`), []byte(`{"jsonrpc":"2.0","method":"m","params":{"a":[1,{}]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), []byte(`{"jsonrpc":"2.0","id":1,"result":{}}x`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var p wire.Parser
		parseBoth(t, &p, a)
		parseBoth(t, &p, b)
		parseBoth(t, &p, a)
	})
}

// FuzzParserSameLength parses a frame and then the same frame with some
// bytes changed, as a flood's frames differ: each result must be
// ParseMessageInto's.
func FuzzParserSameLength(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":12,"total":99,"message":"step 12"}}`), []byte{96, '3', 127, '4'})
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"a":[true,null,"x\"y",1.5e3]}}`), []byte{22, '8', 45, 'f'})
	f.Add([]byte(`["a",{"b":-0}]`), []byte{2, '\\', 12, '1'})
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ab","params":{"n":1}}`), []byte{14, '2', 27, 'c', 13, '1', 41, '7'})
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"}}`), []byte{22, '6', 41, '2', 13, '1'})
	// Values near the end of the frame, where the checks read the last word
	// whole: a string ending 2 bytes before it, an integer just before it.
	f.Add([]byte(`{"jsonrpc":"2.0","method":"m","params":{"n":19,"s":"ab c"}}`), []byte{43, '2', 53, '\x01', 43, '0', 44, '.', 52, '"'})
	f.Add([]byte(`{"a":"xy","b":12}`), []byte{6, 'z', 14, '3', 15, 'e', 7, '\\'})
	f.Add([]byte(`[12345678,"abcdefghi"]`), []byte{1, '0', 8, '9', 19, '\n', 12, '"'})
	f.Fuzz(func(t *testing.T, a, edits []byte) {
		if len(a) == 0 {
			return
		}
		b := bytes.Clone(a)
		for i := 0; i+1 < len(edits); i += 2 {
			b[int(edits[i])%len(b)] = edits[i+1]
		}
		c := bytes.Clone(b) // a third frame, changed where b was and elsewhere
		for i := 1; i+1 < len(edits); i += 3 {
			c[int(edits[i])%len(c)] = edits[i+1] ^ edits[i-1]
		}
		var p wire.Parser
		for _, frame := range [][]byte{a, b, a, b, c, a, a} {
			parseBoth(t, &p, frame)
		}
		var q wire.Parser // the same frames parsed held, two runs
		frames := [][]byte{a, b, a, b, c, a, a}
		for i := range frames {
			frames[i] = bytes.Clone(frames[i])
		}
		parseHeld(t, &q, frames[:4], false)
		parseHeld(t, &q, frames[4:], true)
		var r wire.Parser // the same frames, ParseLike first, as the host reads a flood
		parseLike(t, &r, frames)
		// a frame and the bytes of the next that come after it as far as
		// it is long, a newline among them
		parseLike(t, &r, [][]byte{a, b, append(append(bytes.Clone(a[:len(a)/2]), '\n'), b[len(a)/2+1:]...)})
	})
}
