package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Option configures loading, saving, comparing and playing a record.
// Options are applied in order; an invalid one makes Load, Read, the
// replay or Serve fail with an error that names it.
type Option interface{ apply(*options) error }

type options struct {
	redact   []wire.Rule
	ignore   []wire.Rule
	cmp      []cmp.Option
	speed    float64 // 0: causal
	idleCap  time.Duration
	patience time.Duration
	strict   bool
	same     bool
	onReport func(*Report)
}

// DefaultPatience is how long a replay waits, by default, beyond the
// recorded time, for a message the record says comes next (see Patience).
const DefaultPatience = 2 * time.Second

type optionFunc func(*options) error

func (f optionFunc) apply(o *options) error { return f(o) }

func newOptions(opts []Option) (*options, error) {
	o := &options{patience: DefaultPatience}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt.apply(o); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	return o, nil
}

// Redact redacts the values at paths in every message of a record, when
// it is loaded (Load, Read) and again when it is saved (Record.Write), so
// that a recording can be committed as test data. A path names values from
// the message root with dot-separated keys, array indexes as numbers and
// "*" for any one key or index: "params.arguments.query",
// "result.content.*.text". A value is replaced by a hash of it, the JSON
// string "sha256:" and 16 hex digits, so equal values stay equal and a
// replay still compares them; a path written with a leading "-" drops the
// member instead ("-params._meta"), or makes an array element null (so
// that the other elements keep their places). A value the record holds only part of
// (a frame's head cut inside it) is cut from the head.
//
// A hash of a guessable value (a short number, a word) can be guessed: drop
// secrets, hash what a comparison needs. Redaction reads JSON; a line that
// is not JSON (junk on stdout) is kept as it is, and so is the header
// (command line, working directory, environment variable names).
// What the server under test sends is redacted the same way before it is
// compared. Replaying a request with a redacted value sends the
// redaction.
func Redact(paths ...string) Option {
	return optionFunc(func(o *options) error {
		rs, err := parseRules(paths)
		if err != nil {
			return fmt.Errorf("Redact: %w", err)
		}
		o.redact = append(o.redact, rs...)
		return nil
	})
}

// Ignore leaves the values at paths (as for Redact, without the "-") out
// when messages are compared: volatile fields such as timestamps.
func Ignore(paths ...string) Option {
	return optionFunc(func(o *options) error {
		for _, s := range paths {
			p, err := wire.ParsePath(s)
			if err != nil {
				return fmt.Errorf("Ignore: replay: %w", err)
			}
			o.ignore = append(o.ignore, wire.Rule{Path: p, Edit: wire.Drop})
		}
		return nil
	})
}

// CmpOptions adds go-cmp options to the comparison of messages, which are
// compared as decoded JSON (map[string]any, []any, string, json.Number,
// bool, nil), for what paths cannot say: ids inside text, a tolerance, an
// order that does not matter (cmpopts.SortSlices).
func CmpOptions(opts ...cmp.Option) Option {
	return optionFunc(func(o *options) error {
		o.cmp = append(o.cmp, opts...)
		return nil
	})
}

// Timed makes a replay keep the recorded time between one side's actions,
// divided by speed (2 plays twice as fast) with each gap first capped at
// idleCap (0: no cap), as asciinema's idle_time_limit does. It still waits
// for what each action depended on. The default is causal: each action as
// soon as what it depended on has happened.
func Timed(speed float64, idleCap time.Duration) Option {
	return optionFunc(func(o *options) error {
		if speed <= 0 || idleCap < 0 {
			return errors.New("Timed: want a speed above 0 and an idle cap of 0 or more")
		}
		o.speed, o.idleCap = speed, idleCap
		return nil
	})
}

// Patience sets how long a replay waits for a message the record says
// comes next, beyond twice the time it took in the record, before it calls
// it missing and goes on (default DefaultPatience); the same bound applies
// to waiting for a recorded stall to block the server.
func Patience(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		if d <= 0 {
			return errors.New("Patience: want a duration above 0")
		}
		o.patience = d
		return nil
	})
}

// Strict makes a replay fail (Report.Err, TestServer, mcpstdio replay
// -strict) on anything it could not play or judge, as well as on a rule
// that failed: a finding Unverified, a request or cancel the record has
// only the head of, a fault or stall not played; under Same, a message it
// could not compare, a stall it could not verify. Without it those are
// listed and the first line counts them.
func Strict() Option {
	return optionFunc(func(o *options) error {
		o.strict = true
		return nil
	})
}

// Same makes Host and TestServer judge the server under test by sameness
// instead of by the rules: each message it sends is compared with the
// recorded server's (Record.Compare; Ignore, CmpOptions, Redact), and
// every difference, message missing or extra, and stall where it did not
// block as the recorded one did is a Departure. Use it for a record of a
// correct session, to catch any change; a record of a hang judged by
// sameness passes on the server that hung. Serve always compares.
func Same() Option {
	return optionFunc(func(o *options) error {
		o.same = true
		return nil
	})
}

// OnReport has fn called with the Report when Serve's replay ends (its
// function returns only the Report's Err).
func OnReport(fn func(*Report)) Option {
	return optionFunc(func(o *options) error {
		o.onReport = fn
		return nil
	})
}
