package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpstdio/mcpstdio/record"
)

// FaultKind describes one kind of fault: what it does and the parameters
// it takes besides the trigger.
type FaultKind struct {
	Name     string
	Doc      string
	Params   []string // parameters it takes (JSON names), besides the triggers
	Required []string // of those, the ones it needs
	Dirs     []string // the directions it applies to
}

var allDirs = []string{record.DirIn, record.DirOut, record.DirErr}

// faultKinds is the one table of faults: the flag syntax, the JSON config
// and the checks all come from it.
var faultKinds = []FaultKind{
	{"stop", "stop reading the source, for `for` (default: until the end of the session), as a host or server that stops reading would", []string{"for"}, nil, allDirs},
	{"slice", "split every write into writes of `size` bytes with `delay` between them", []string{"size", "delay"}, []string{"size"}, allDirs},
	{"latency", "hold every chunk for `delay` before writing it", []string{"delay"}, []string{"delay"}, allDirs},
	{"bandwidth", "write at most `rate` bytes per second", []string{"rate"}, []string{"rate"}, allDirs},
	{"truncate", "forward exactly `after_bytes` bytes, then close the destination (EOF, usually mid-message); the rest of the source is read and discarded", nil, []string{"after_bytes"}, allDirs},
	{"close", "close the destination when triggered; the rest of the source is read and discarded", nil, nil, allDirs},
	{"drop", "do not forward frames with method `method` (`count` of them; default all)", []string{"method", "count"}, []string{"method"}, allDirs},
	{"duplicate", "forward frames with method `method` twice (`count` of them; default all)", []string{"method", "count"}, []string{"method"}, allDirs},
	{"withhold-cancel", "do not forward notifications/cancelled (`count` of them; default all)", []string{"count"}, nil, []string{record.DirIn, record.DirOut}},
	{"sigstop", "stop the server process (SIGSTOP) for `for`, then continue it (SIGCONT); Unix only", []string{"for"}, []string{"for"}, append([]string{""}, allDirs...)},
}

// FaultKinds returns the kinds of faults, in the order of the table.
func FaultKinds() []FaultKind { return slices.Clone(faultKinds) }

func faultKind(name string) (FaultKind, bool) {
	for _, k := range faultKinds {
		if k.Name == name {
			return k, true
		}
	}
	return FaultKind{}, false
}

// checkFault reports whether f is a fault the proxy can inject here.
func checkFault(f record.Fault) error {
	k, ok := faultKind(f.Kind)
	if !ok {
		names := make([]string, len(faultKinds))
		for i, k := range faultKinds {
			names[i] = k.Name
		}
		return fmt.Errorf("proxy: fault kind %q: want one of %s", f.Kind, strings.Join(names, ", "))
	}
	if !slices.Contains(k.Dirs, f.Dir) {
		return fmt.Errorf("proxy: fault %s: direction %q: want one of %q", f.Kind, f.Dir, k.Dirs)
	}
	set := faultParams(f)
	triggers := 0
	for _, t := range []string{"after_bytes", "after_method", "after"} {
		if set[t] {
			triggers++
		}
	}
	if triggers > 1 {
		return fmt.Errorf("proxy: fault %s: at most one of after_bytes, after_method and after", f.Kind)
	}
	for p := range set {
		if p == "after_bytes" || p == "after_method" || p == "after" || p == "note" {
			continue
		}
		if !slices.Contains(k.Params, p) {
			return fmt.Errorf("proxy: fault %s does not take %s (it takes %s)", f.Kind, p, strings.Join(append(slices.Clone(k.Params), "after_bytes", "after_method", "after"), ", "))
		}
	}
	for _, p := range k.Required {
		if !set[p] {
			return fmt.Errorf("proxy: fault %s needs %s", f.Kind, p)
		}
	}
	if f.Kind == "sigstop" && f.Dir == "" && (set["after_bytes"] || set["after_method"]) {
		return fmt.Errorf("proxy: fault sigstop: after_bytes and after_method need a direction")
	}
	if f.Kind == "sigstop" && !canPause {
		return fmt.Errorf("proxy: fault sigstop: %w", errors.ErrUnsupported)
	}
	for name, v := range map[string]int64{"after_bytes": int64(f.AfterBytes), "size": int64(f.Size), "rate": int64(f.Rate), "count": int64(f.Count), "for": int64(f.For), "after": int64(f.After), "delay": int64(f.Delay)} {
		if v < 0 {
			return fmt.Errorf("proxy: fault %s: %s is negative", f.Kind, name)
		}
	}
	return nil
}

// faultParams returns the names of the parameters f sets.
func faultParams(f record.Fault) map[string]bool {
	b, _ := json.Marshal(f)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	set := map[string]bool{}
	for k := range m {
		if k != "dir" && k != "kind" {
			set[k] = true
		}
	}
	return set
}

// ParseFault parses a fault from its command-line form,
// DIR:KIND[:NAME=VALUE,...] (or KIND:... for sigstop), e.g.
// "out:stop:after_bytes=1MiB,for=30s" or "in:withhold-cancel". Names may
// use '-' for '_'. Sizes take the suffixes KiB, MiB and GiB; durations are
// Go durations (30s, 250ms).
func ParseFault(s string) (record.Fault, error) {
	parts := strings.SplitN(s, ":", 3)
	var dir, kind, params string
	switch {
	case slices.Contains(allDirs, parts[0]) && len(parts) >= 2:
		dir, kind = parts[0], parts[1]
		if len(parts) == 3 {
			params = parts[2]
		}
	default:
		kind = parts[0]
		params = strings.Join(parts[1:], ":")
	}
	if err := faultWords(s, parts, kind); err != nil {
		return record.Fault{}, err
	}
	obj := map[string]any{"dir": dir, "kind": kind}
	if params != "" {
		for _, kv := range strings.Split(params, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return record.Fault{}, fmt.Errorf("proxy: fault %q: %q is not NAME=VALUE", s, kv)
			}
			k = strings.ReplaceAll(k, "-", "_")
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				obj[k] = n
			} else {
				obj[k] = v
			}
		}
	}
	b, _ := json.Marshal(obj)
	f, err := decodeFault(b)
	if err != nil {
		return record.Fault{}, fmt.Errorf("proxy: fault %q: %w", s, err)
	}
	return f, nil
}

// faultWords explains a fault whose direction or kind is misspelled: in
// the wrong case, or a direction that is not one.
func faultWords(s string, parts []string, kind string) error {
	lower := func(w string) bool { return strings.ToLower(w) != w }
	if _, ok := faultKind(kind); ok {
		return nil
	}
	switch {
	case slices.Contains(allDirs, strings.ToLower(parts[0])) && lower(parts[0]):
		return fmt.Errorf("proxy: fault %q: direction %q: directions are lower case: in, out or err", s, parts[0])
	case lower(kind):
		if _, ok := faultKind(strings.ToLower(kind)); ok {
			return fmt.Errorf("proxy: fault %q: kind %q: kinds are lower case (%s)", s, kind, strings.ToLower(kind))
		}
	case len(parts) >= 2 && !slices.Contains(allDirs, parts[0]):
		if _, ok := faultKind(parts[1]); ok {
			return fmt.Errorf("proxy: fault %q: direction %q: want in (host to server), out (server stdout) or err (server stderr)", s, parts[0])
		}
	}
	return nil
}

func decodeFault(b []byte) (record.Fault, error) {
	var f record.Fault
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return record.Fault{}, err
	}
	return f, checkFault(f)
}

// ParseFaults reads a JSON config: an array of faults, e.g.
// [{"dir":"out","kind":"stop","after_bytes":"1MiB","for":"30s"}].
func ParseFaults(b []byte) ([]record.Fault, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, fmt.Errorf("proxy: faults config: want a JSON array of faults: %w", err)
	}
	out := make([]record.Fault, 0, len(raws))
	for i, r := range raws {
		f, err := decodeFault(r)
		if err != nil {
			return nil, fmt.Errorf("proxy: faults config, fault %d: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}
