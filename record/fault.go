package record

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault is a fault the proxy injects into one direction, as toxiproxy's
// toxics do for TCP, plus the one a pipe needs most: stop reading. It is
// the same in Go, in a JSON config (proxy.ParseFaults) and on the command
// line (proxy.ParseFault: "out:stop:after_bytes=1MiB,for=30s"), and it is
// recorded as configured in the header and when it fires and ends.
//
// A fault starts when its trigger is met: AfterBytes bytes of Dir have been
// forwarded (exactly: the read is cut there), a frame with method
// AfterMethod has been forwarded whole in Dir, or After has passed since
// the start (checked before each read of Dir); with no trigger it starts at
// once. At most one trigger may be set. proxy.FaultKinds lists the kinds
// and their parameters.
//
// A fault holds the server no longer than the session: once the host has
// ended it (it closed the proxy's stdin, or had a signal that ends a
// process passed on) and the server has not exited within the proxy's exit
// grace, every fault lets go of the server, each saying so when it ends: a
// stop ends (For or not: "until the end" means the session's end), pacing
// stops, a sigstop continues the server. A host that closes its end of the
// proxy's stdout or stderr ends a stop or pacing of that direction at once
// (Unix): no one will read what they hold.
type Fault struct {
	Dir  string `json:"dir,omitempty"`  // DirIn, DirOut, DirErr (may be empty for sigstop with After)
	Kind string `json:"kind"`           // see proxy.FaultKinds
	Note string `json:"note,omitempty"` // free text, recorded with the fault

	AfterBytes  Size     `json:"after_bytes,omitempty"`
	AfterMethod string   `json:"after_method,omitempty"`
	After       Duration `json:"after,omitempty"`
	For         Duration `json:"for,omitempty"` // how long it lasts: stop (0: to the end of the session), sigstop

	Method string   `json:"method,omitempty"` // drop, duplicate: the frames it applies to
	Count  int      `json:"count,omitempty"`  // drop, duplicate: how many frames (0: every one)
	Size   Size     `json:"size,omitempty"`   // slice: bytes per write
	Delay  Duration `json:"delay,omitempty"`  // slice: pause between writes; latency: hold per chunk
	Rate   Size     `json:"rate,omitempty"`   // bandwidth: bytes per second
}

// String is the fault in the command-line syntax.
func (f Fault) String() string {
	b, _ := json.Marshal(f)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	var ps []string
	for k, v := range m {
		if k == "dir" || k == "kind" {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		ps = append(ps, k+"="+s)
	}
	slices.Sort(ps)
	s := f.Kind
	if f.Dir != "" {
		s = f.Dir + ":" + s
	}
	if len(ps) > 0 {
		s += ":" + strings.Join(ps, ",")
	}
	return s
}

// Size is a byte count; in JSON and flags a number or a string with a
// suffix: "64KiB", "1MiB", "1GiB".
type Size int64

// UnmarshalJSON accepts a number or a string such as "1MiB".
func (s *Size) UnmarshalJSON(b []byte) error {
	var n int64
	if json.Unmarshal(b, &n) == nil {
		*s = Size(n)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("size: want a number or a string such as \"1MiB\": %s", b)
	}
	return s.Set(str)
}

// Set parses a byte count with an optional suffix B, KiB, MiB or GiB (also
// K, M, G, KB, MB, GB, meaning the same powers of two), so that a Size is a
// flag.Value.
func (s *Size) Set(str string) error {
	v, err := parseSize(str)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// String writes the size with the largest suffix that divides it:
// "64KiB", "1MiB", "1000".
func (s Size) String() string {
	for _, u := range []struct {
		suf string
		m   Size
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s != 0 && s%u.m == 0 {
			return strconv.FormatInt(int64(s/u.m), 10) + u.suf
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// parseSize parses a byte count with a suffix (see Size.Set).
func parseSize(str string) (int64, error) {
	t := strings.TrimSpace(str)
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a byte count such as 65536 or 64KiB", str)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: over the largest size, %d bytes", str, int64(math.MaxInt64))
	}
	return n * mult, nil
}

// Duration is a time.Duration written as a Go duration string ("30s") in
// JSON and flags.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a string such as "30s" or "250ms".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"30s\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}
