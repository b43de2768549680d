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
// chunks' data as they are read, and the bodies redaction rewrites. The
// first MiB is kept in memory; past it, all goes to a temporary file,
// removed at once where the system allows (else when nothing refers to
// the store any more). Where no file can be made or written, the rest
// stays in memory.
type store struct {
	mu      sync.Mutex
	f       *os.File
	mem     []byte // bytes [memBase, size)
	memBase int64  // the file holds the bytes before it
	size    int64
	err     error // making or writing the file failed
}

// memStore is how many bytes a store keeps in memory before it makes its
// file: a small record needs no file.
const memStore = 1 << 20

// ref is bytes [at, at+n) of a store.
type ref struct {
	s  *store
	at int64
	n  int
}

// put appends b and returns where it is.
func (s *store) put(b []byte) ref {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil && s.err == nil && len(s.mem)+len(b) > memStore {
		s.open()
	}
	r := ref{s, s.size, len(b)}
	if s.f != nil && s.err == nil {
		if _, err := s.f.WriteAt(b, s.size); err == nil {
			s.size += int64(len(b))
			s.memBase = s.size
			return r
		} else {
			s.err = err
		}
	}
	s.mem = append(s.mem, b...)
	s.size += int64(len(b))
	return r
}

// open makes the store's file, with what memory held; it is closed (and
// removed) once nothing refers to the store; s.mu held.
func (s *store) open() {
	f, err := os.CreateTemp("", "mcpstdio-replay-*")
	if err == nil {
		_, err = f.WriteAt(s.mem, 0)
	}
	if err != nil {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
		s.err = err
		return
	}
	s.f, s.mem, s.memBase = f, nil, s.size
	if runtime.GOOS != "windows" && os.Remove(f.Name()) == nil {
		runtime.AddCleanup(s, func(f *os.File) { f.Close() }, f)
	} else {
		runtime.AddCleanup(s, func(f *os.File) { f.Close(); os.Remove(f.Name()) }, f)
	}
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
	s := r.s
	lo, hi := r.at+int64(from), r.at+int64(to)
	b := make([]byte, 0, hi-lo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo < s.memBase {
		fb := make([]byte, min(hi, s.memBase)-lo)
		if _, err := s.f.ReadAt(fb, lo); err != nil {
			return nil
		}
		b = append(b, fb...)
		lo = s.memBase
	}
	if lo < hi {
		b = append(b, s.mem[lo-s.memBase:hi-s.memBase]...)
	}
	return b
}

// bytes returns all of r.
func (r ref) bytes() []byte { return r.read(0, r.n) }

// follows reports whether r begins where p ends in the same store.
func (r ref) follows(p ref) bool {
	return r.s == p.s && r.s != nil && p.at+int64(p.n) == r.at
}
