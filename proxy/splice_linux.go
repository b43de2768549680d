//go:build linux

package proxy

import (
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// On Linux, a direction whose source and destination are both pipes (the
// server's side always is; the host's is when the host runs the proxy on
// pipes, as MCP hosts do) forwards large chunks with splice(2), straight
// from one pipe to the other: the kernel moves the pages, the bytes never
// enter the proxy, and there is no intermediate pipe. Before each splice,
// tee(2) duplicates the same bytes, without consuming them, into a pipe of
// the observer's own (as large as ObserverBuffer allows, within
// /proc/sys/fs/pipe-max-size); the tee never waits (SPLICE_F_NONBLOCK). When
// the observer's pipe is full (it is behind by all of it), the chunk is
// spliced without a tee: its detail is lost and counted, as ever, and the
// observer picks up at the next line end. The traffic never waits for the
// observer, and never pays for it in CPU either: a chunk does not go by the
// copying path, which costs more, because the observer is behind (measured:
// with one of two cores kept busy, the proxy took 720-1080 ms of CPU per GB
// of 1 MiB lines where the splice relay took 170-230; by splicing without
// detail, with the observer then on a thread of lower priority (since
// removed: it bought no rate a user sees and lost most of a flood's
// detail on a loaded machine), 280-420). Bytes are counted from splice's return values. A splice that
// cannot go on (the destination full) waits in poll(2) as a write does, and
// is interrupted the same way.
//
// The extra buffering is then less than the copying path's: the chunk is
// never held by the proxy, so between the host and the server there are
// only the two pipes (the host's and the server's). A chunk in flight is
// at most ChunkSize bytes, so chunk events and ChunkSize mean the same on
// both paths.
//
// Which path a chunk takes, per chunk: a direction starts on read(2) and
// write(2); a read that returns at least spliceMin bytes (the source is
// delivering in bulk) sends the next chunks by splice. While the source
// holds bytes they all go by splice; once it is found empty (a tee took less
// than a chunk, or none), the direction waits for it in poll(2) and tees
// what came: spliceMin or more goes on by splice; less is spliced too, being
// teed already, and what follows goes back to read and write (when the
// observer's pipe has no room, FIONREAD says how much came). So small
// messages keep the copying path, and a stream of large frames is spliced
// but for its first chunk. Faults (Config.Faults) on a direction, and a host
// stream that is not a pipe (a file, a terminal, a socket), keep it on the
// copying path; so does Config.LogBodies, whose record is meant for a replay
// and keeps every byte in its chunk events, which the copying path has at
// hand.
//
// The measurement behind spliceMin (BenchmarkChunkPaths: a round trip
// whose response is one chunk, through a proxy process forced onto each
// path, median of 3,000, 2-core AMD EPYC, load 1.3): copy/splice 39/66 µs
// at 1 KiB, 33/47 at 4 KiB, 67/99 at 16 KiB, 101/93 at 32 KiB, 138/103 at
// 64 KiB. Below 32 KiB a tee, a splice and the observer's read of its pipe
// cost more than a read and a write of a few pages; from 32 KiB on, the
// copies saved win. A 1 GiB line forced onto each path took 1.4 s by
// splice and 1.7 s by copying, with the proxy's peak RSS 15 and 23 MiB
// (the copying path's observer pool fills as the observer falls behind).

// spliceMin is the smallest chunk that makes the next one go by splice.
const spliceMin = 32 << 10

// splicer is a direction's splice path: its observer pipe and counters.
type splicer struct {
	src, dst *rawFile
	obsR     int // the observer's pipe, read end (the observer's)
	obsW     int // and write end (the forwarder's)
	obsCap   int
	always   bool // forced (tests): every chunk by splice
	bulk     bool // a read of spliceMin or more began bulk: splice until the source refills with less
	drained  bool // the last tee took less than a chunk: the source is likely empty

	queued  atomic.Int64 // bytes teed that the observer has not read yet
	spliced atomic.Int64 // bytes moved by splice
	buf     []byte       // the observer's copies of teed chunks
	ahead   []byte       // in buf: read from the pipe, not yet taken

	mu           sync.Mutex
	rDone, wDone bool
}

// newSplicer returns f's splice path, or nil where the direction copies:
// forwarding forced to copy, a record that keeps bodies, faults on it, or
// an end that is not a non-blocking pipe.
func newSplicer(f *forwarder, mode int32) *splicer {
	if mode == fwdCopy || mode == fwdAuto && f.p.cfg.LogBodies || f.f != nil ||
		f.rsrc == nil || f.rdst == nil || !isPipe(f.rsrc.fd) || !isPipe(f.rdst.fd) {
		return nil
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil
	}
	s := &splicer{src: f.rsrc, dst: f.rdst, obsR: p[0], obsW: p[1], always: mode == fwdSplice}
	// The largest pipe the observer may have: ObserverBuffer, or the most
	// an unprivileged process gets.
	for _, n := range []int{f.p.cfg.ObserverBuffer, 1 << 20} {
		if _, err := unix.FcntlInt(uintptr(s.obsW), unix.F_SETPIPE_SZ, n); err == nil {
			break
		}
	}
	s.obsCap, _ = unix.FcntlInt(uintptr(s.obsW), unix.F_GETPIPE_SZ, 0)
	if s.obsCap <= 0 {
		s.obsCap = 64 << 10
	}
	return s
}

func isPipe(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// wantSplice reports whether the next chunk goes by splice.
func (s *splicer) wantSplice() bool { return s != nil && (s.always || s.bulk) }

// copied tells the rule that the copying path just moved n bytes.
func (s *splicer) copied(n int) {
	if s != nil {
		s.bulk = n >= spliceMin
	}
}

// spliceStep forwards one chunk at source offset off by tee and splice.
// It returns the bytes forwarded, the source's error and the destination's
// (as the copying path's read and write return them); n == 0 with no
// error: the source is empty and the copying path takes over.
func (f *forwarder) spliceStep(off int64) (n int, rerr, werr error) {
	s := f.sp
	defer runtime.KeepAlive(s.src.f)
	defer runtime.KeepAlive(s.dst.f)
	limit := f.p.cfg.ChunkSize
	f.flushBatch() // the order of events is kept
	inPipe, issued := f.waiting()
	var t int // bytes teed for the observer
	waited := false
	if s.drained {
		// The last chunk emptied the source: a tee now would most likely
		// find nothing, so wait for it first (as a read does, rawio_unix.go).
		s.drained = false
		if err := s.src.wait(unix.POLLIN); err != nil {
			return 0, err, nil
		}
		waited = true
	}
	for ; ; waited = true {
		var err error
		t, err = 0, unix.EAGAIN
		// Only the forwarder sends on f.obs: room seen now is there when the
		// event is sent, and a teed chunk's event is never lost (the
		// observer reads the pipe by the events).
		if cap(f.obs) > len(f.obs) && s.queued.Load() < int64(s.obsCap) {
			t, err = tee(s.src.fd, s.obsW, limit)
		}
		if err == unix.EPIPE {
			err = unix.EAGAIN // the observer is done (Wait returned): no room for detail
		}
		if err == nil && t == 0 {
			return 0, nil, nil // the source ended: the copying path reads the EOF
		}
		if err == nil {
			n = t
			s.drained = t < limit
			if waited && !s.always && t < spliceMin {
				s.bulk = false // woken by a small chunk: teed, it is spliced; the next are copied
			}
			break
		}
		if err != unix.EAGAIN {
			return 0, &os.PathError{Op: "tee", Path: s.src.name, Err: err}, nil
		}
		// The source is empty, or the observer's pipe (or channel) is full.
		avail, err := available(s.src)
		if err != nil {
			return 0, err, nil
		}
		if avail > 0 && waited && !s.always && avail < spliceMin {
			s.bulk = false // woken by a small chunk: it goes by read and write
			return 0, nil, nil
		}
		if avail > 0 {
			// The observer is behind, its pipe full: this chunk is
			// forwarded without detail.
			n = min(avail, limit)
			break
		}
		if waited {
			return 0, nil, nil // ready and empty: ended
		}
		if err := s.src.wait(unix.POLLIN); err != nil {
			return 0, err, nil
		}
	}
	return n, nil, f.spliceChunk(off, n, t > 0, inPipe, issued)
}

// spliceChunk forwards the n bytes at source offset off by splice, with
// the observer's events: teed, its copy is in the observer's pipe; else its
// detail is lost. inPipe and issued are what waiting found before it.
func (f *forwarder) spliceChunk(off int64, n int, teed bool, inPipe int, issued time.Time) error {
	s := f.sp
	now := time.Now()
	f.read.Add(int64(n))
	ev := obsEvent{kind: obsRead, off: off, n: n, t: now, tee: teed, waited: inPipe, issued: issued}
	if !teed {
		f.lostBytes.Add(int64(n))
	} else if q := s.queued.Add(int64(n)); q > int64(s.obsCap/2) {
		f.nudge()
	}
	f.send(ev)
	werr := f.splice(n)
	wend := time.Now()
	f.away = wend.Sub(now) >= awayMin
	f.written.Store(off + int64(n))
	f.send(obsEvent{kind: obsWritten, off: off, n: n, t: wend, since: now})
	return werr
}

// splice moves n bytes from the source to the destination, waiting while
// the destination is full; the source holds them (they were teed or
// counted by FIONREAD, and only the forwarder takes from it).
func (f *forwarder) splice(n int) error {
	s := f.sp
	f.writeLen.Store(int64(n))
	f.splicing.Store(true)
	f.writeStart.Store(int64(time.Since(f.p.start)) + 1)
	defer f.writeStart.Store(0)
	defer f.splicing.Store(false)
	for n > 0 {
		f.writes.Add(1)
		k, err := unix.Splice(s.src.fd, nil, s.dst.fd, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if k > 0 {
			n -= int(k)
			f.delivered.Add(k)
			s.spliced.Add(k)
		}
		switch {
		case err == nil && k == 0:
			return &os.PathError{Op: "splice", Path: s.src.name, Err: io.ErrUnexpectedEOF}
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := s.dst.wait(unix.POLLOUT); err != nil {
				return err
			}
		default:
			return &os.PathError{Op: "splice", Path: s.dst.name, Err: err}
		}
	}
	return nil
}

// available is how many bytes pipe p holds (FIONREAD).
func available(p *rawFile) (int, error) {
	n, err := unix.IoctlGetInt(p.fd, unix.TIOCINQ)
	if err != nil {
		return 0, &os.PathError{Op: "ioctl", Path: p.name, Err: err}
	}
	return n, nil
}

// tee duplicates up to n bytes of pipe src into pipe dst without waiting.
func tee(src, dst, n int) (int, error) {
	for {
		k, err := unix.Tee(src, dst, n, unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return int(k), err
		}
	}
}

// take returns the n teed bytes of the observer's next event, read from
// its pipe (in reads of up to takeBuf bytes, ahead of the events, which
// the pipe holds already); nil if they cannot be read (then the detail is
// lost). The bytes are good until the next take. Only the observer calls
// it.
func (s *splicer) take(n int) []byte {
	defer s.queued.Add(-int64(n))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rDone {
		return nil
	}
	if len(s.ahead) < n {
		if size := max(n, takeBuf); cap(s.buf) < size {
			s.buf = make([]byte, size)
		}
		have := copy(s.buf[:cap(s.buf)], s.ahead)
		for have < n {
			k, err := unix.Read(s.obsR, s.buf[have:cap(s.buf)])
			switch {
			case err == unix.EINTR:
			case err != nil || k == 0:
				s.ahead = nil
				return nil // not there: the events and the pipe no longer agree
			default:
				have += k
			}
		}
		s.ahead = s.buf[:have]
	}
	b := s.ahead[:n:n]
	s.ahead = s.ahead[n:]
	return b
}

// takeBuf is the most the observer reads from its pipe at once.
const takeBuf = 256 << 10

// closeWrite closes the forwarder's end of the observer's pipe; closeRead
// the observer's, once it is done.
func (s *splicer) closeWrite() {
	if s != nil {
		s.closeEnd(s.obsW, &s.wDone)
	}
}

func (s *splicer) closeRead() {
	if s != nil {
		s.closeEnd(s.obsR, &s.rDone)
	}
}

func (s *splicer) closeEnd(fd int, done *bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !*done {
		*done = true
		unix.Close(fd)
	}
}

// behind is how many teed bytes the observer has not read yet, and how
// many its pipe holds.
func (s *splicer) behind() (queued int64, capacity int) {
	if s == nil {
		return 0, 0
	}
	return s.queued.Load(), s.obsCap
}

// splicedBytes is how many bytes went by splice.
func (s *splicer) splicedBytes() int64 {
	if s == nil {
		return 0
	}
	return s.spliced.Load()
}
