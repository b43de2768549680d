package mcptest

import (
	"bytes"
	"io"
	"sync"
)

// idScanner sits between the stall valve and the framer and follows the
// JSON structure of each line just enough to find its top-level "id", in
// O(1) memory however long the line is. The framer discards frames over the
// limit unparsed; the scanner remembers the ids of exactly those lines, in
// order, so that the oversized response can fail its own request even when
// "id" comes after a huge "result".
type idScanner struct {
	r     io.Reader
	limit int64

	// State of the current line.
	lineLen   int64
	prev      byte
	depth     int
	inStr     bool
	esc       bool
	expectKey bool // at depth 1, the next string is a key
	inKey     bool
	key       []byte
	keyIsID   bool // the last key at depth 1 was "id"
	wantVal   bool // after "id":
	inVal     bool
	val       []byte
	id        []byte // the id found on this line, raw JSON

	mu        sync.Mutex
	oversized [][]byte // ids (nil if not found) of oversized lines not yet claimed
}

func newIDScanner(r io.Reader, limit int) *idScanner {
	return &idScanner{r: r, limit: int64(limit)}
}

func (s *idScanner) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.scan(p[:n])
	return n, err
}

// pop returns the id of the oldest oversized line not yet claimed.
func (s *idScanner) pop() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.oversized) == 0 {
		return nil
	}
	id := s.oversized[0]
	s.oversized = s.oversized[1:]
	return id
}

// current returns the id of the unfinished line, if found.
func (s *idScanner) current() []byte { return bytes.Clone(s.id) }

func (s *idScanner) endLine() {
	size := s.lineLen
	if s.prev == '\r' && size > 0 {
		size--
	}
	if size > s.limit {
		s.mu.Lock()
		s.oversized = append(s.oversized, bytes.Clone(s.id))
		s.mu.Unlock()
	}
	s.lineLen, s.prev, s.depth = 0, 0, 0
	s.inStr, s.esc, s.expectKey, s.inKey, s.keyIsID, s.wantVal, s.inVal = false, false, false, false, false, false, false
	s.id = s.id[:0]
}

func (s *idScanner) finishVal() {
	if s.inVal {
		s.inVal = false
		if s.id == nil || len(s.id) == 0 {
			s.id = append(s.id[:0], s.val...)
		}
	}
}

func (s *idScanner) scan(b []byte) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\n' {
			s.endLine()
			continue
		}
		if s.inStr && !s.esc && !s.inKey && !s.inVal {
			// Fast path through string contents: jump to the next byte
			// that matters.
			rest := b[i:]
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
			if j > 0 {
				s.lineLen += int64(j)
				s.prev = rest[j-1]
				i += j - 1
				continue
			}
		}
		s.lineLen++
		s.prev = c
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.inKey {
					s.inKey = false
					s.keyIsID = string(s.key) == "id"
				}
				if s.inVal {
					s.val = append(s.val, c)
					s.finishVal()
				}
				continue
			}
			if s.inKey && len(s.key) <= 2 {
				s.key = append(s.key, c)
			}
			if s.inVal && len(s.val) < 128 {
				s.val = append(s.val, c)
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && s.expectKey {
				s.inKey, s.key = true, s.key[:0]
			} else if s.depth == 1 && s.wantVal {
				s.wantVal, s.inVal, s.val = false, true, append(s.val[:0], c)
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
				s.wantVal = s.keyIsID
				s.keyIsID, s.expectKey = false, false
			}
		case ',':
			if s.depth == 1 {
				s.finishVal()
				s.wantVal, s.expectKey = false, true
			}
		case ' ', '\t', '\r':
			if s.depth == 1 {
				s.finishVal()
			}
		default:
			if s.depth == 1 && s.wantVal {
				s.wantVal, s.inVal, s.val = false, true, append(s.val[:0], c)
			} else if s.depth == 1 && s.inVal && len(s.val) < 128 {
				s.val = append(s.val, c)
			}
		}
	}
}
