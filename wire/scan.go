package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"

	"github.com/mcpstdio/mcpstdio/internal/jsonstr"
)

// Envelope is what a Scanner found of one frame's top level.
type Envelope struct {
	// Start is the offset of the frame's first byte among all the bytes
	// written to the Scanner.
	Start int64
	// Size is the frame's length in bytes, without its "\n" or "\r\n"
	// (in OnID's callback and Current: the bytes so far).
	Size int64
	// ID is the raw JSON of the top-level "id", nil if the frame has
	// none; an id longer than 128 bytes is given as LongID gives it.
	ID []byte
	// DuplicateID reports a second top-level "id": the frame is ambiguous
	// (see the package documentation). ID is the first.
	DuplicateID bool
	// Method is the raw JSON string of the top-level "method" (its first
	// 128 bytes, quotes included), nil if the frame has none.
	Method []byte
}

const keepValue = 128

// LongID returns what stands for a raw JSON value longer than 128 bytes
// (an id, a progress token) where values are kept bounded: a JSON string
// of at most 128 bytes holding the value's first bytes (those that need
// no escaping; others become '.') and its SHA-256, so that two values
// differ in it whenever they differ anywhere, however long they are.
// Shorter values are returned as they are. Scanner gives a long id so.
func LongID(raw []byte) []byte {
	if len(raw) <= keepValue {
		return raw
	}
	sum := sha256.Sum256(raw)
	return longID(raw, sum[:])
}

// longPrefix is how many of a long value's first bytes LongID keeps.
const longPrefix = 40

func longID(raw, sum []byte) []byte {
	b := make([]byte, 0, 2+longPrefix+len("…sha256:")+32)
	b = append(b, '"')
	for _, c := range raw[:min(len(raw), longPrefix)] {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			c = '.'
		}
		b = append(b, c)
	}
	b = append(b, "…sha256:"...)
	b = hex.AppendEncode(b, sum[:16])
	return append(b, '"')
}

// maxKeyEscaped is the longest raw key the Scanner reads: "method" with
// every character escaped ("\u006d…").
const maxKeyEscaped = 6 * len("method")

// Scanner follows the JSON structure of newline-delimited frames as their
// bytes pass through Write, just enough to find each frame's top-level "id"
// and "method", in constant memory however long the frame is. It never
// validates: on malformed input it reports what it could see. It is for
// frames that are too large to parse (a transport limit discards them
// unparsed, yet their request must fail) and for observers that must not
// hold a frame whole.
//
// A Scanner is not safe for concurrent use.
type Scanner struct {
	onFrame func(Envelope)
	onID    func(Envelope)
	total   int64 // bytes written so far

	env       Envelope
	prev      byte
	depth     int
	inStr     bool
	esc       bool
	expectKey bool // at depth 1, the next string is a key
	inKey     bool
	keyLong   bool
	key       []byte
	member    byte // the member whose value comes next: 'i' id, 'm' method, 0 other
	wantVal   bool // after the ':' of a member of interest
	inVal     bool
	val       []byte
	long      bool      // the id value has passed keepValue bytes: valHash has its SHA-256
	valHash   hash.Hash // made at the first long id, then reused
	hashBuf   []byte    // bytes of the long id not yet given to valHash
	idBuf     []byte    // reused for Envelope.ID
	methodBuf []byte    // reused for Envelope.Method
}

// NewScanner returns a Scanner that calls onFrame with the envelope of every
// frame as soon as its newline has passed. onFrame runs inside Write and
// must not keep the envelope's slices past its return without copying them.
func NewScanner(onFrame func(Envelope)) *Scanner {
	return &Scanner{onFrame: onFrame, key: make([]byte, 0, maxKeyEscaped), val: make([]byte, 0, keepValue)}
}

// OnID makes the Scanner call f as soon as a frame's top-level "id" has
// passed, before the rest of the frame: for a host that wants to know which
// request a long response answers while it is still arriving. f gets the
// envelope so far and must not keep its slices.
func (s *Scanner) OnID(f func(Envelope)) { s.onID = f }

// Current returns what has been found of the unfinished frame (the bytes
// written since the last newline), with copies of its slices.
func (s *Scanner) Current() Envelope {
	e := s.env
	e.ID, e.Method = bytes.Clone(e.ID), bytes.Clone(e.Method)
	return e
}

// Write scans p. It never fails.
func (s *Scanner) Write(p []byte) (int, error) {
	base := s.total
	s.total += int64(len(p))
	s.scan(p, base)
	return len(p), nil
}

func (s *Scanner) endLine(next int64) {
	if s.prev == '\r' && s.env.Size > 0 {
		s.env.Size--
	}
	s.finishVal()
	if s.onFrame != nil {
		s.onFrame(s.env)
	}
	s.env = Envelope{Start: next}
	s.prev, s.depth = 0, 0
	s.inStr, s.esc, s.expectKey, s.inKey, s.wantVal, s.inVal = false, false, false, false, false, false
	s.member = 0
}

func (s *Scanner) finishVal() {
	if !s.inVal {
		return
	}
	s.inVal = false
	switch s.member {
	case 'i':
		if s.env.ID != nil {
			s.env.DuplicateID = true
			return
		}
		if s.long {
			s.valHash.Write(s.hashBuf)
			s.hashBuf = s.hashBuf[:0]
			s.idBuf = append(s.idBuf[:0], longID(s.val, s.valHash.Sum(nil))...)
			s.long = false
		} else {
			s.idBuf = append(s.idBuf[:0], s.val...)
		}
		s.env.ID = s.idBuf
		if s.onID != nil {
			s.onID(s.env)
		}
	case 'm':
		s.methodBuf = append(s.methodBuf[:0], s.val...)
		s.env.Method = s.methodBuf
	}
}

func (s *Scanner) scan(b []byte, base int64) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\n' {
			s.endLine(base + int64(i) + 1)
			continue
		}
		if s.inStr && !s.esc && !s.inKey && !s.inVal {
			if j := plainRun(b[i:]); j > 0 {
				s.env.Size += int64(j)
				s.prev = b[i+j-1]
				i += j - 1
				continue
			}
		}
		s.env.Size++
		s.prev = c
		if s.inStr {
			s.stringByte(c)
		} else {
			s.structByte(c)
		}
	}
}

// plainRun returns how many bytes at the start of rest are string contents
// that matter to nobody: up to the next quote, backslash or newline. It is
// the fast path through the contents of strings that are neither a key nor
// a value of interest.
func plainRun(rest []byte) int {
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		j = len(rest)
	}
	if k := bytes.IndexByte(rest[:j], '\\'); k >= 0 {
		j = k
	}
	if k := bytes.IndexByte(rest[:j], '\n'); k >= 0 {
		j = k
	}
	return j
}

// stringByte follows one byte inside a string: escapes, the closing quote,
// and the bytes of a top-level key or a value of interest.
func (s *Scanner) stringByte(c byte) {
	if jsonstr.End(&s.esc, c) {
		s.inStr = false
		if s.inKey {
			s.inKey = false
			switch key := DecodeKey(s.key); { // as JSON decodes it: "\u0069d" is "id"
			case s.keyLong:
				s.member = 0
			case key == "id":
				s.member = 'i'
			case key == "method":
				s.member = 'm'
			default:
				s.member = 0
			}
		}
		if s.inVal {
			s.valByte(c)
			s.finishVal()
		}
		return
	}
	if s.inKey && len(s.key) < cap(s.key) {
		s.key = append(s.key, c)
	} else if s.inKey {
		s.keyLong = true // longer than any key of interest
	}
	if s.inVal {
		s.valByte(c)
	}
}

// valByte keeps one more byte of a value of interest: the first keepValue
// bytes, and for an id the SHA-256 of all of them.
func (s *Scanner) valByte(c byte) {
	switch {
	case len(s.val) < keepValue:
		s.val = append(s.val, c)
		return
	case s.member != 'i':
		return
	case !s.long:
		if s.valHash == nil {
			s.valHash, s.hashBuf = sha256.New(), make([]byte, 0, 512)
		}
		s.long = true
		s.valHash.Reset()
		s.valHash.Write(s.val)
		s.hashBuf = s.hashBuf[:0]
	case len(s.hashBuf) == cap(s.hashBuf):
		s.valHash.Write(s.hashBuf)
		s.hashBuf = s.hashBuf[:0]
	}
	s.hashBuf = append(s.hashBuf, c)
}

// structByte follows one byte outside strings: nesting, the top level's
// keys and values.
func (s *Scanner) structByte(c byte) {
	switch c {
	case '"':
		s.inStr = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.keyLong, s.key = true, false, s.key[:0]
		} else if s.depth == 1 && s.wantVal {
			s.wantVal, s.inVal, s.val, s.long = false, true, append(s.val[:0], c), false
		}
	case '{', '[':
		s.wantVal = false
		s.depth++
		s.expectKey = s.depth == 1 && c == '{'
	case '}', ']':
		s.finishVal()
		s.depth--
	case ':':
		if s.depth == 1 {
			s.wantVal = s.member != 0
			s.expectKey = false
		}
	case ',':
		if s.depth == 1 {
			s.finishVal()
			s.wantVal, s.expectKey, s.member = false, true, 0
		}
	case ' ', '\t', '\r':
		if s.depth == 1 {
			s.finishVal()
		}
	default:
		if s.depth == 1 && s.wantVal {
			s.wantVal, s.inVal, s.val, s.long = false, true, append(s.val[:0], c), false
		} else if s.depth == 1 && s.inVal {
			s.valByte(c)
		}
	}
}
