package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpstdio/mcpstdio/wire"
)

// maxDiff bounds the diff a departure keeps.
const maxDiff = 8 << 10

// Compare compares got, a message the side under test sent, with want, the
// recorded frame it stands for: both decoded as JSON, without their "id"
// (a replay remaps ids), with the record's redaction (and opts' Redact)
// applied to got, the Ignore paths left out of both, and opts'
// CmpOptions. A value the proxy redacted when it recorded ("[redacted]",
// by its -redact paths or secret-looking keys) matches anything. It
// returns "" when they agree, else the cmp diff (-recorded +got), cut to
// 8 KiB; past 64 KiB of messages, the diff of the two with long arrays,
// objects and strings cut short, each cut part standing as its size and
// hash. checked is false when the record has only want's head: nothing is
// compared. Lines that are not JSON compare as bytes.
func (r *Record) Compare(want *Frame, got []byte, opts ...Option) (diff string, checked bool) {
	if !want.Whole() {
		return "", false
	}
	o, _ := newOptions(opts)
	if o == nil {
		o = &options{}
	}
	return r.compare(want, got, o)
}

// compare is Compare with the options read.
func (r *Record) compare(want *Frame, got []byte, o *options) (diff string, checked bool) {
	body := want.body()
	if body == nil {
		return "", false
	}
	got, _ = wire.Rewrite(got, append(append([]wire.Rule(nil), r.rules...), o.redact...))
	drop := append([]wire.Rule{{Path: wire.Path{"id"}, Edit: wire.Drop}}, o.ignore...)
	wb, _ := wire.Rewrite(body, drop)
	gb, _ := wire.Rewrite(got, drop)
	if bytes.Equal(wb, gb) && json.Valid(wb) {
		// The same JSON text decodes to the same value: the server under
		// test most often sends what the recorded one did, byte for byte,
		// and decoding megabytes to find it out is most of a replay's work.
		return "", true
	}
	w, wok := decode(wb)
	g, gok := decode(gb)
	if !wok || !gok {
		w, g = string(body), string(got)
	}
	opts := append([]cmp.Option{anyForRedacted}, o.cmp...)
	if cmp.Equal(w, g, opts...) {
		return "", true
	}
	d := ""
	if len(body)+len(got) > bigDiff {
		d = cmp.Diff(cut(w), cut(g), opts...)
	}
	if d == "" {
		d = cmp.Diff(w, g, opts...)
	}
	if len(d) > maxDiff {
		d = d[:maxDiff] + "\n… (diff cut at 8 KiB)"
	}
	return d, true
}

// Past bigDiff bytes on the two sides, the diff is of the values cut down
// (cut) when that shows a difference: cmp formats all of a difference,
// and a large one (a result of 20,000 entries where the record has a page
// of 30) is megabytes of text and a second of CPU, of which a departure
// keeps 8 KiB.
const (
	bigDiff  = 64 << 10
	cutElems = 32      // array elements and object members kept
	cutBytes = 1 << 10 // string bytes kept
)

// cut returns v, a decoded JSON value, with every array and object past
// cutElems elements or members (in key order) and every string past
// cutBytes cut there; what was cut is one last element, member or tail
// that says how much it was and its hash, so a difference in it still
// shows.
func cut(v any) any {
	switch v := v.(type) {
	case string:
		if len(v) <= cutBytes {
			return v
		}
		return v[:cutBytes] + fmt.Sprintf("… (%d bytes in all, sha256 %s)", len(v), hash(v))
	case []any:
		n := min(len(v), cutElems)
		out := make([]any, n, n+1)
		for i := range n {
			out[i] = cut(v[i])
		}
		if len(v) > n {
			out = append(out, fmt.Sprintf("… %d more elements, sha256 %s", len(v)-n, hash(v[n:])))
		}
		return out
	case map[string]any:
		if len(v) <= cutElems {
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[k] = cut(e)
			}
			return out
		}
		keys := slices.Sorted(maps.Keys(v))
		out := make(map[string]any, cutElems+1)
		for _, k := range keys[:cutElems] {
			out[k] = cut(v[k])
		}
		rest := make(map[string]any, len(keys)-cutElems)
		for _, k := range keys[cutElems:] {
			rest[k] = v[k]
		}
		out["…"] = fmt.Sprintf("%d more members, sha256 %s", len(rest), hash(rest))
		return out
	}
	return v
}

// hash is the sha256 of v as JSON, in short.
func hash(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// redacted is the value the proxy records in place of one it redacted
// (record.Redacted, decoded).
const redacted = "[redacted]"

// anyForRedacted makes a value the proxy redacted before recording match
// whatever comes in its place: the recorded value is not known.
var anyForRedacted = cmp.FilterValues(func(x, y any) bool {
	return x == any(redacted) || y == any(redacted)
}, cmp.Ignore())

// decode decodes a JSON text.
func decode(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}
