package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash"
	"hash/crc32"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// castagnoli is the CRC-32C table: the CPU computes it (SSE 4.2, ARMv8) at
// several GB/s, where SHA-256 would take most of the observer's time.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameAsm follows the lines of one direction from copies of its chunks,
// in memory bounded by ParseLimit + HeadBytes whatever the line length:
// each line is redacted and hashed as it streams, its head kept, and its
// bytes kept for parsing only while it is within ParseLimit; past that, a
// wire.Scanner finds its top-level id and method.
type frameAsm struct {
	head, parse int
	bodies      bool
	red         *redactor
	sc          *wire.Scanner
	env         wire.Envelope // what sc found at the newline
	scDirty     bool          // sc has seen part of a line
	h           hash.Hash

	pos    int64 // source offset of the next byte
	active bool  // a line has begun
	start  int64 // its first byte's offset
	t0     time.Time
	size   int64  // its bytes so far, a final '\r' included
	last   byte   // its last byte
	gap    bool   // part of it was not seen
	seen   bool   // its first byte was seen (its gap came later)
	gapIn  string // the top-level member the gap began in, "" if none
	over   bool   // it passed the parse limit: scanned only
	body   []byte
	heads  []byte
	hcr    bool   // a '\r' is held back from the hash: it may be the terminator
	data   []byte // the chunk's redacted bytes, when bodies are kept
	dataOK bool   // data is complete for the chunk
}

func newFrameAsm(cfg Config, pol *redactPolicy) *frameAsm {
	a := &frameAsm{head: cfg.HeadBytes, parse: cfg.ParseLimit, bodies: cfg.LogBodies, h: crc32.New(castagnoli)}
	a.red = newRedactor(pol, a.sink)
	a.newScanner()
	return a
}

// newScanner starts a fresh scanner (after a line it saw only part of).
func (a *frameAsm) newScanner() {
	a.sc = wire.NewScanner(func(e wire.Envelope) {
		a.env = wire.Envelope{Size: e.Size, ID: bytes.Clone(e.ID), Method: bytes.Clone(e.Method), DuplicateID: e.DuplicateID}
	})
	a.scDirty = false
}

// sink takes the redactor's output.
func (a *frameAsm) sink(b []byte) {
	if len(b) == 0 {
		return
	}
	if a.bodies {
		a.data = append(a.data, b...)
	}
	if room := a.head - len(a.heads); room > 0 {
		a.heads = append(a.heads, b[:min(room, len(b))]...)
	}
	if a.hcr {
		a.h.Write([]byte{'\r'})
		a.hcr = false
	}
	if b[len(b)-1] == '\r' {
		a.h.Write(b[:len(b)-1])
		a.hcr = true
		return
	}
	a.h.Write(b)
}

// lost notes n bytes the observer did not see at the current position.
func (a *frameAsm) lost(n int64) {
	if n <= 0 {
		return
	}
	a.pos += n
	a.dataOK = false
	if a.active {
		if !a.gap {
			a.gapIn = a.red.member()
		}
		a.gap = true
		a.size += n
		return
	}
	// A line began somewhere in the lost bytes, or right after them: its
	// start is unknown.
	a.begin(a.pos-n, time.Time{})
	a.seen = false
	a.size = n
	a.gap = true
}

func (a *frameAsm) begin(off int64, t time.Time) {
	a.active, a.start, a.t0 = true, off, t
	a.size, a.last, a.gap, a.over = 0, 0, false, false
	a.seen, a.gapIn = true, ""
	a.body, a.heads = a.body[:0], a.heads[:0]
	a.hcr = false
	a.h.Reset()
	a.red.reset()
	if a.scDirty {
		a.newScanner()
	}
	a.env = wire.Envelope{}
}

// startChunk prepares for a chunk's bytes.
func (a *frameAsm) startChunk() {
	a.data = a.data[:0]
	a.dataOK = true
}

// feed takes a chunk's bytes read at t, calling done for every line that
// ends in it.
func (a *frameAsm) feed(b []byte, t time.Time, done func(*frameAsm, time.Time)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if len(seg) > 0 {
			if !a.active {
				a.begin(a.pos, t)
			}
			a.content(seg)
		}
		a.pos += int64(len(seg))
		if i < 0 {
			return
		}
		a.pos++ // the newline
		if a.active {
			done(a, t)
			a.active = false
		} else if a.bodies {
			a.data = append(a.data, '\n') // an empty line
		}
		b = b[i+1:]
	}
}

func (a *frameAsm) content(seg []byte) {
	a.size += int64(len(seg))
	a.last = seg[len(seg)-1]
	if a.gap {
		a.dataOK = false
		return
	}
	a.red.write(seg)
	switch {
	case a.over:
		// Contents of a nested string tell the scanner nothing (but its
		// envelope's Start and Size, which are not used: the line's are
		// a.start and a.size); they are the bulk of a long line, and would
		// be a third pass over it.
		if !a.red.deepPlain {
			a.sc.Write(seg)
		}
		a.scDirty = true
	case len(a.body)+len(seg) <= a.parse+1: // +1: a final '\r'
		a.body = append(a.body, seg...)
	default:
		a.over = true
		a.scDirty = true
		a.sc.Write(a.body)
		a.sc.Write(seg)
		a.body = a.body[:0]
	}
}

// frame describes the line that just ended (at the newline) or was cut
// off (unterminated) as an event, and returns the parsed message when it
// was within the parse limit and is JSON-RPC.
func (a *frameAsm) frame(dir string, unterminated bool) (record.Event, *wire.Message) {
	ev := record.Event{Ev: record.EvFrame, Dir: dir, Off: a.start, N: a.size, Unterminated: unterminated}
	if !unterminated && a.last == '\r' {
		ev.N--
		ev.CRLF = true
	}
	if a.bodies && !unterminated {
		a.data = append(a.data, '\n')
	}
	if a.gap {
		ev.Gap = true
		a.gapResponse(&ev)
		return ev, nil
	}
	if !ev.CRLF && a.hcr {
		a.h.Write([]byte{'\r'})
	}
	a.hcr = false
	ev.Hash = fmt.Sprintf("crc32c:%08x", a.h.(hash.Hash32).Sum32())
	ev.Redacted = a.red.count
	head := a.heads
	if int64(len(head)) > ev.N {
		head = head[:ev.N]
	}
	ev.Head = string(trimRune(head))
	if a.over {
		a.sc.Write([]byte{'\n'})
		a.scDirty = false
		ev.Scanned = true
		if len(a.env.ID) > 0 {
			ev.ID = cut(a.env.ID)
		}
		var m string
		if len(a.env.Method) > 0 && json.Unmarshal(a.env.Method, &m) == nil {
			ev.Method = m
		}
		switch {
		case ev.Method != "" && ev.ID != nil:
			ev.Kind = record.KindRequest
		case ev.Method != "":
			ev.Kind = record.KindNotification
		case ev.ID != nil:
			ev.Kind = record.KindResponse
		default:
			ev.Kind = record.KindJunk
		}
		return ev, nil
	}
	body := a.body
	if ev.CRLF {
		body = body[:len(body)-1]
	}
	m, err := wire.ParseMessage(body)
	if err != nil {
		ev.Kind = record.KindJunk
		return ev, nil
	}
	ev.Method = m.Method
	if len(m.ID) > 0 {
		ev.ID = cut(m.ID)
	}
	switch {
	case m.IsRequest():
		ev.Kind = record.KindRequest
		if m.Method == wire.MethodToolsCall {
			ev.Tool = stringMember(m.Params, "name")
		}
		if tok := wire.Member(wire.Member(m.Params, "_meta"), wire.MetaProgressToken); len(tok) > 0 {
			ev.Token = cut(tok)
		}
	case m.IsNotification():
		ev.Kind = record.KindNotification
		if m.Method == wire.MethodProgress {
			if tok := wire.Member(m.Params, wire.MetaProgressToken); len(tok) > 0 {
				ev.Token = cut(tok)
			}
		}
	default:
		ev.Kind = record.KindResponse
		if m.Error != nil {
			ev.Kind, ev.Code = record.KindError, m.Error.Code
		}
	}
	return ev, m
}

// cut bounds a raw JSON value kept in an event (an id or a token): one
// longer than 128 bytes becomes wire.LongID's string of its first bytes
// and its hash, as the scanner gives it, so that ids are compared whole
// at any length; one not valid JSON a JSON string of its first bytes.
func cut(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 128 {
		return wire.LongID(raw)
	}
	if !json.Valid(raw) {
		b, _ := json.Marshal(string(trimRune(raw[:min(len(raw), 128)])))
		return b
	}
	return bytes.Clone(raw)
}

// stringMember returns obj's member key as a Go string, "" if it is absent
// or not a string.
func stringMember(obj json.RawMessage, key string) string {
	var s string
	if v := wire.Member(obj, key); len(v) > 0 && json.Unmarshal(v, &s) == nil {
		return s
	}
	return ""
}

// trimRune drops an incomplete UTF-8 sequence at the end of b.
func trimRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// current returns the top-level id and method found so far of the line in
// progress, and its size; ok is false when no line is in progress.
func (a *frameAsm) current() (id json.RawMessage, method string, size int64, ok bool) {
	if !a.active || a.gap {
		return nil, "", a.size, a.active
	}
	return a.seenSoFar()
}

// seenSoFar is current's answer from the bytes of the line seen so far
// (before its gap, if it has one).
func (a *frameAsm) seenSoFar() (id json.RawMessage, method string, size int64, ok bool) {
	var env wire.Envelope
	if a.over {
		env = a.sc.Current()
	} else {
		sc := wire.NewScanner(nil)
		sc.Write(a.body)
		env = sc.Current()
	}
	if len(env.ID) > 0 {
		id = cut(env.ID)
	}
	if len(env.Method) > 0 {
		_ = json.Unmarshal(env.Method, &method)
	}
	return id, method, a.size, true
}

// gapResponse fills in the id and kind of a line only partly seen when
// what was seen says it is a response: its start was seen, with a
// top-level id and no method, and the gap began inside its top-level
// "result" or "error". Its request is then answered, as observed; the
// bytes lost are counted as ever.
func (a *frameAsm) gapResponse(ev *record.Event) {
	if !a.seen || a.gapIn != "result" && a.gapIn != "error" {
		return
	}
	id, method, _, _ := a.seenSoFar()
	if id == nil || method != "" {
		return
	}
	ev.ID, ev.Kind = id, record.KindResponse
	if a.gapIn == "error" {
		ev.Kind = record.KindError
	}
}
