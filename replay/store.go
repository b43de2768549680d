package replay

import (
	"os"
	"runtime"
	"sync"
)

// memBody is the longest body a Frame keeps in memory (Body); a longer
// one stays on disk, in the record's store, and is read when a step needs
// it, so that a replay's memory is that of its largest frame and the
// record's events, not of the record's bytes.
const memBody = 64 << 10

// store holds the bytes of a record that are not kept in memory — the
// chunks' data as they are read, and the bodies redaction rewrites — in a
// temporary file, removed at once where the system allows (else when
// nothing refers to the store any more). Where no temporary file can be made, it holds
// them in memory.
type store struct {
	mu   sync.Mutex
	f    *os.File
	mem  []byte // when there is no file
	size int64
	err  error // the file failed: the rest goes to mem
}

// ref is a range of a store.
type ref struct {
	s  *store
	at int64
	n  int
}

// newStore returns a store; its file is closed (and removed) once
// nothing refers to the store.
func newStore() *store {
	s := &store{}
	f, err := os.CreateTemp("", "mcpstdio-replay-*")
	if err != nil {
		s.err = err
		return s
	}
	s.f = f
	if runtime.GOOS != "windows" && os.Remove(f.Name()) == nil {
		runtime.AddCleanup(s, func(f *os.File) { f.Close() }, f)
	} else {
		runtime.AddCleanup(s, func(f *os.File) { f.Close(); os.Remove(f.Name()) }, f)
	}
	return s
}

// put appends b and returns where it is.
func (s *store) put(b []byte) ref {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil && s.err == nil {
		if _, err := s.f.WriteAt(b, s.size); err == nil {
			r := ref{s, s.size, len(b)}
			s.size += int64(len(b))
			return r
		} else {
			s.err = err
		}
	}
	// In memory, after the file's end: at counts from there.
	r := ref{s, -1 - int64(len(s.mem)), len(b)}
	s.mem = append(s.mem, b...)
	return r
}

// read returns bytes [from, to) of r (nil if r is none, or the file
// cannot be read).
func (r ref) read(from, to int) []byte {
	if r.s == nil {
		return nil
	}
	to = min(to, r.n)
	if from >= to {
		return []byte{}
	}
	if r.at < 0 {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		at := int(-1 - r.at)
		return append([]byte(nil), r.s.mem[at+from:at+to]...)
	}
	b := make([]byte, to-from)
	if _, err := r.s.f.ReadAt(b, r.at+int64(from)); err != nil {
		return nil
	}
	return b
}

// bytes returns all of r.
func (r ref) bytes() []byte { return r.read(0, r.n) }

// follows reports whether r begins where p ends in the same store.
func (r ref) follows(p ref) bool {
	return r.s == p.s && r.s != nil && r.at >= 0 && p.at >= 0 && p.at+int64(p.n) == r.at
}
