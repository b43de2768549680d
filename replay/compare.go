package replay

import (
	"bytes"
	"encoding/json"

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
// by its -redact paths or secret-looking keys) matches anything. It returns "" when they agree, else the cmp diff (-recorded
// +got), cut to 8 KiB. checked is false when the record has only want's
// head: nothing is compared. Lines that are not JSON compare as bytes.
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
	w, wok := decode(body, drop)
	g, gok := decode(got, drop)
	if !wok || !gok {
		w, g = string(body), string(got)
	}
	d := cmp.Diff(w, g, append([]cmp.Option{anyForRedacted}, o.cmp...)...)
	if len(d) > maxDiff {
		d = d[:maxDiff] + "\n… (diff cut at 8 KiB)"
	}
	return d, true
}

// redacted is the value the proxy records in place of one it redacted
// (record.Redacted, decoded).
const redacted = "[redacted]"

// anyForRedacted makes a value the proxy redacted before recording match
// whatever comes in its place: the recorded value is not known.
var anyForRedacted = cmp.FilterValues(func(x, y any) bool {
	return x == any(redacted) || y == any(redacted)
}, cmp.Ignore())

// decode decodes a JSON text with the drop rules applied.
func decode(b []byte, drop []wire.Rule) (any, bool) {
	b, _ = wire.Rewrite(b, drop)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}
