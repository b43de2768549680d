package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/wire"
)

func TestScanner(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name, line string
		want       wire.Envelope // Size is filled in from line
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"result":{"t":"` + long + `"}}`, wire.Envelope{ID: []byte("7")}},
		{"id last", `{"jsonrpc":"2.0","result":{"t":"` + long + `"},"id":42}`, wire.Envelope{ID: []byte("42")}},
		{"string id", `{"result":{"t":"` + long + `"},"id":"a\"b"}`, wire.Envelope{ID: []byte(`"a\"b"`)}},
		{"nested id ignored", `{"result":{"id":1,"t":"` + long + `","x":[{"id":2}]},"id":3}`, wire.Envelope{ID: []byte("3")}},
		{"id-like text ignored", `{"result":{"t":"\"id\":5 ` + long + `"},"id":6}`, wire.Envelope{ID: []byte("6")}},
		{"spaces", `{ "result" : "` + long + `" , "id" : 9 }`, wire.Envelope{ID: []byte("9")}},
		{"no id", `{"result":"` + long + `"}`, wire.Envelope{}},
		{"crlf", `{"id":11,"result":"` + long + "\"}\r", wire.Envelope{ID: []byte("11")}},
		{"method and id", `{"jsonrpc":"2.0","method":"tools/call","params":{"method":"x","t":"` + long + `"},"id":"r1"}`,
			wire.Envelope{ID: []byte(`"r1"`), Method: []byte(`"tools/call"`)}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"t":"` + long + `"}}`,
			wire.Envelope{Method: []byte(`"notifications/progress"`)}},
		{"duplicate id", `{"jsonrpc":"2.0","id":2,"result":"` + long + `","id":3}`, wire.Envelope{ID: []byte("2"), DuplicateID: true}},
		{"long key is not id", `{"identifier":5,"idx":6,"result":"` + long + `"}`, wire.Envelope{}},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":"` + long + `"}]`, wire.Envelope{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			want.Size = int64(len(strings.TrimSuffix(c.line, "\r")))
			want.Start = int64(len("{\"id\":99}\n"))
			for _, chunk := range []int{1, 7, 4096} {
				var got []wire.Envelope
				s := wire.NewScanner(func(e wire.Envelope) {
					e.ID, e.Method = append([]byte(nil), e.ID...), append([]byte(nil), e.Method...)
					got = append(got, e)
				})
				in := []byte("{\"id\":99}\n" + c.line + "\n{\"id\":100}\n")
				for i := 0; i < len(in); i += chunk {
					s.Write(in[i:min(i+chunk, len(in))])
				}
				if len(got) != 3 {
					t.Fatalf("chunks of %d: %d envelopes, want 3", chunk, len(got))
				}
				if string(got[0].ID) != "99" || string(got[2].ID) != "100" {
					t.Errorf("chunks of %d: neighbours' ids %q and %q, want 99 and 100", chunk, got[0].ID, got[2].ID)
				}
				if diff := cmp.Diff(want, got[1], cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
					t.Errorf("chunks of %d: envelope mismatch (-want +got):\n%s", chunk, diff)
				}
			}
		})
	}
}

// TestScannerCurrent: the unfinished frame's envelope is available before
// its newline, as a truncated frame needs.
func TestScannerCurrent(t *testing.T) {
	s := wire.NewScanner(nil)
	s.Write([]byte(`{"jsonrpc":"2.0","id":5,"result":"abc`))
	e := s.Current()
	if string(e.ID) != "5" || e.Size != 37 {
		t.Errorf("Current() = id %q size %d, want id 5 size 37", e.ID, e.Size)
	}
}

// TestScannerOnID: the id is reported as soon as it has passed, with the
// frame's start, before the frame ends.
func TestScannerOnID(t *testing.T) {
	var seen []wire.Envelope
	s := wire.NewScanner(nil)
	s.OnID(func(e wire.Envelope) { e.ID = append([]byte(nil), e.ID...); seen = append(seen, e) })
	s.Write([]byte("{\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":22,\"result\":\"" + strings.Repeat("x", 100)))
	if len(seen) != 2 || string(seen[1].ID) != "22" || seen[1].Start != 21 || seen[1].Size != 25 {
		t.Errorf("OnID saw %+v, want id 22 starting at 21 with 25 bytes so far (up to the comma after it)", seen)
	}
}

// TestScannerLongIDs: ids longer than 128 bytes that share their first
// 128 bytes (strings, numbers) are told apart, whatever the chunking: each
// is given as LongID gives it, a valid JSON string of at most 128 bytes.
func TestScannerLongIDs(t *testing.T) {
	prefix := strings.Repeat("p", 128)
	ids := []string{`"` + prefix + `-first"`, `"` + prefix + `-second"`, `"` + prefix + `\"\n<x>"`, strings.Repeat("1", 129), strings.Repeat("1", 130), `"` + strings.Repeat("é", 200) + `"`}
	for _, chunk := range []int{1, 3, 4096} {
		var got [][]byte
		s := wire.NewScanner(func(e wire.Envelope) { got = append(got, append([]byte(nil), e.ID...)) })
		var in []byte
		for i, id := range ids {
			in = append(in, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`+"\n"...)
			if i == 2 {
				in = append(in, `{"id" : `+id+` , "result":{}}`+"\n"...)
			}
		}
		for i := 0; i < len(in); i += chunk {
			s.Write(in[i:min(i+chunk, len(in))])
		}
		want := make([]string, 0, len(ids)+1)
		for i, id := range ids {
			want = append(want, string(wire.LongID([]byte(id))))
			if i == 2 {
				want = append(want, want[i])
			}
		}
		seen := map[string]bool{}
		for i, g := range got {
			if i >= len(want) || string(g) != want[i] {
				t.Errorf("chunks of %d: frame %d: ID %q, want %q", chunk, i, g, want[min(i, len(want)-1)])
			}
			if len(g) > 128 || !json.Valid(g) {
				t.Errorf("chunks of %d: frame %d: ID %q is longer than 128 bytes or not JSON", chunk, i, g)
			}
			if i != 3 && seen[string(g)] {
				t.Errorf("chunks of %d: frame %d: ID %q given to another id too", chunk, i, g)
			}
			seen[string(g)] = true
		}
	}
	if short := []byte(`"abc"`); string(wire.LongID(short)) != `"abc"` {
		t.Errorf("LongID of a short id: %q, want it as it is", wire.LongID(short))
	}
}
