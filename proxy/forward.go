package proxy

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// Each direction (host → server stdin, server stdout → host, server
// stderr → host) is one goroutine that reads at most Config.ChunkSize
// bytes, writes them all to the destination, and only then reads again.
// Nothing is parsed, rewritten, reordered or dropped on that path (faults
// aside), non-JSON lines included. The directions share no lock and never
// wait for the observer. An end passes on as an end: EOF on a source
// closes its destination, and a write that fails because the reader went
// away (EPIPE) closes the source, so each side sees what it would have
// seen without the proxy.
//
// The exact extra buffering the proxy adds per direction is one kernel
// pipe (between the proxy and the server; its capacity is in the record's
// header and can be set with Config.PipeCapacity on Linux) plus at most
// one chunk (ChunkSize bytes) held in a write. So a host that stops
// reading blocks the server once the server has written what the host's
// pipe holds, plus ChunkSize, plus the server's pipe. With 16 KiB pipes and
// chunks, that is 48 KiB: the tests check it byte for byte. A chunk that
// goes by splice (splice_linux.go) is never held by the proxy: there the
// server blocks after the host's pipe plus its own, 32 KiB in the same
// test, which runs on both paths.
//

// errClosed ends a forwarder that the proxy stopped (its reading, or a
// fault that closed the destination).
var errClosed = errors.New("proxy: closed")

// dirIndex numbers the three streams.
type dirIndex int

const (
	dIn  dirIndex = iota // host → server stdin
	dOut                 // server stdout → host
	dErr                 // server stderr → host
)

var (
	dirNames    = [3]string{record.DirIn, record.DirOut, record.DirErr}
	streamNames = [3]string{"stdin", "stdout", "stderr"}
	// srcNames and dstNames say, for each direction, whose stream the
	// proxy reads and whose it writes.
	srcNames = [3]string{"the host's stdin", "the server's stdout", "the server's stderr"}
	dstNames = [3]string{"the server's stdin", "the host's stdout", "the host's stderr"}
)

// Kinds of observer events.
const (
	obsRead    = iota // bytes were read (buf holds a copy, or nil if none was free)
	obsWritten        // the write of the bytes read last returned
)

// obsEvent is what a forwarder tells the observer. It is sent without
// blocking; when the observer's channel is full the event is counted as
// lost and the observer later records the gap.
type obsEvent struct {
	kind  uint8
	off   int64     // source offset of the chunk's first byte
	n     int       // bytes
	t     time.Time // when the read or the write returned
	since time.Time // obsWritten: when the write began
	buf   []byte    // obsRead: a copy of the bytes, from the direction's pool
	small bool      // buf is a copy of its own (a small read), not from the pool
	tee   bool      // obsRead: the bytes are in the observer's pipe (the splice path)
	reads int       // reads merged into this event (a batch), 0 or 1 for one
	// obsRead, after the forwarder was away from its source for awayMin
	// or more: waited-1 bytes were in the source's pipe when the read was
	// issued, at issued (waited 0: not measured).
	waited int
	issued time.Time
}

// awayMin is how long a forwarder must have been away from its source (a
// write that blocked, a fault that held it) for its next read to measure
// what waited in the source's pipe meanwhile (see record.Event's Waited).
const awayMin = time.Millisecond

// forwarder moves one direction's bytes: read at most ChunkSize bytes from
// the source, write them all to the destination, and only then read again.
// It shares no lock with the other directions; the observer gets copies
// through a channel it never waits on.
type forwarder struct {
	p     *Proxy
	d     dirIndex
	src   io.Reader
	dst   io.Writer
	buf   []byte
	obs   chan obsEvent
	free  chan []byte // the pool of copy buffers
	slots int         // the most copy buffers
	made  int         // copy buffers made so far (lazily: memory is used only when the observer lags)
	f     *dirFaults

	interruptible bool     // a blocked read of src can be ended
	rsrc, rdst    *rawFile // the Unix fast path for src and dst, when they are non-blocking files
	sp            *splicer // the Linux splice path, when src and dst are pipes (see splice_linux.go)

	halt     chan struct{} // closed when the proxy interrupts this direction: a stop fault ends
	haltOnce sync.Once
	hostGone chan struct{} // closed when the host closed its end of dst (out, err; see sessionend.go)
	readDone chan struct{} // closed when the source has ended or failed
	done     chan struct{} // closed when the forwarder has ended

	// Read by the observer and Status at any time.
	read       atomic.Int64 // bytes read from the source
	written    atomic.Int64 // source bytes handled (written on, or dropped by a fault)
	delivered  atomic.Int64 // bytes written to the destination
	writes     atomic.Int64 // write calls on the destination
	writeStart atomic.Int64 // when the write in progress began, in ns since the proxy started, plus 1; 0 when none is
	writeLen   atomic.Int64 // bytes of the write in progress
	splicing   atomic.Bool  // the write in progress is a splice: the proxy holds none of its bytes
	lostEvents atomic.Int64 // events the observer's channel had no room for
	lostBytes  atomic.Int64 // bytes read that the observer got no copy of
	small      atomic.Int64 // bytes of small copies the observer holds
	batchMu    sync.Mutex
	batch      *obsBatch              // small reads merged while the observer is behind
	hasBatch   atomic.Bool            // batch != nil
	stopped    atomic.Int64           // UnixNano since when a fault stops reading; 0 when none does
	held       atomic.Int64           // ns that ended stops held the source
	stopName   atomic.Pointer[string] // the stop fault in effect (or last in effect), in the flag syntax

	away bool // the last write (or a fault) kept the forwarder from its source for awayMin or more

	mu        sync.Mutex
	srcErr    error // how the source ended: io.EOF, or the read error
	srcEnd    time.Time
	dstErr    error // why writing failed
	dstErrAt  time.Time
	closedDst bool // the destination was closed to pass the source's end on
	closedSrc bool // the source was closed to pass a failed write back
}

func newForwarder(p *Proxy, d dirIndex, src io.Reader, dst io.Writer) *forwarder {
	slots := max(p.cfg.ObserverBuffer/p.cfg.ChunkSize, 1)
	f := &forwarder{
		p: p, d: d, src: src, dst: dst,
		buf:      make([]byte, p.cfg.ChunkSize),
		obs:      make(chan obsEvent, 2*slots+4096),
		free:     make(chan []byte, slots),
		slots:    slots,
		halt:     make(chan struct{}),
		hostGone: make(chan struct{}),
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
	}
	f.f = p.faults.forDir(d, f)
	f.rsrc, f.rdst = newRawFile(src), newRawFile(dst)
	f.interruptible = f.rsrc != nil || canInterrupt(src)
	f.sp = newSplicer(f, p.fwd)
	return f
}

func (f *forwarder) run() {
	defer close(f.done)
	defer close(f.obs)
	defer f.rsrc.release()
	defer f.rdst.release()
	defer f.sp.closeWrite()
	var off int64
	empty := 0
	for {
		if f.f != nil {
			g := time.Now()
			if !f.f.gate() {
				f.endRead(errClosed)
				return
			}
			f.away = f.away || time.Since(g) >= awayMin
		}
		if f.sp.wantSplice() {
			n, err, werr := f.spliceStep(off)
			off += int64(n)
			if werr != nil {
				f.writeFailed(werr)
				f.endRead(errClosed)
				return
			}
			if err != nil {
				f.endRead(err)
				f.sourceEnded(err)
				return
			}
			if n > 0 {
				empty = 0
				continue
			}
		}
		// Read into a buffer from the pool when there is one: the observer
		// then reads the same bytes, never written again until it hands the
		// buffer back, and no copy is made. Without one, the forwarder
		// reads into its own and the observer loses this chunk.
		buf := f.copyBuf()
		shared := buf != nil
		if !shared {
			buf = f.buf
		}
		limit := len(buf)
		if f.f != nil {
			limit = f.f.readLimit(off, limit)
		}
		waited, issued := f.waiting()
		n, err := f.readSource(buf[:limit])
		now := time.Now()
		f.sp.copied(n)
		if n == 0 && shared {
			f.free <- buf // there are at most slots buffers, so there is room
		}
		if n > 0 {
			empty = 0
			f.read.Add(int64(n))
			// While the observer is behind, small reads are merged into
			// one batch it takes when it comes (see batch.go).
			merge := f.merging(n)
			giveBack := shared
			if !merge {
				f.flushBatch()
				ev := obsEvent{kind: obsRead, off: off, n: n, t: now, waited: waited, issued: issued}
				giveBack = f.share(&ev, buf[:n], shared)
				f.send(ev)
			}
			var werr error
			if f.f == nil {
				werr = f.write(buf[:n])
			} else {
				werr = f.f.deliver(off, buf[:n], now)
			}
			wend := time.Now()
			f.away = wend.Sub(now) >= awayMin
			if merge {
				f.addBatch(off, buf[:n], now, wend)
			}
			if giveBack {
				f.free <- buf // there are at most slots buffers, so there is room
			}
			off += int64(n)
			f.written.Store(off)
			if !merge {
				f.send(obsEvent{kind: obsWritten, off: off - int64(n), n: n, t: wend, since: now})
			}
			if werr != nil {
				f.writeFailed(werr)
				f.endRead(errClosed)
				return
			}
		} else if err == nil {
			if empty++; empty >= 100 {
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			f.endRead(err)
			f.sourceEnded(err)
			return
		}
	}
}

// waiting returns, when the forwarder has been away from its source for
// awayMin or more, what waits in the source's pipe now, before it reads
// again, plus one (0 where that is not known or not measured), and the
// time.
func (f *forwarder) waiting() (int, time.Time) {
	if !f.away {
		return 0, time.Time{}
	}
	f.away = false
	now := time.Now()
	if n, ok := pipeBuffered(f.src); ok {
		return n + 1, now
	}
	return 0, time.Time{}
}

// readSource reads once from the source.
func (f *forwarder) readSource(b []byte) (int, error) {
	if f.rsrc != nil {
		return f.rsrc.Read(b)
	}
	return f.src.Read(b)
}

// write writes b whole to the destination, publishing that a write is in
// progress for the observer.
func (f *forwarder) write(b []byte) error {
	f.writeLen.Store(int64(len(b)))
	f.writeStart.Store(int64(time.Since(f.p.start)) + 1)
	defer f.writeStart.Store(0)
	for len(b) > 0 {
		f.writes.Add(1)
		var n int
		var err error
		if f.rdst != nil {
			n, err = f.rdst.Write(b)
		} else {
			n, err = f.dst.Write(b)
		}
		f.delivered.Add(int64(n))
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		b = b[n:]
	}
	return nil
}

// endRead notes how the source ended.
func (f *forwarder) endRead(err error) {
	f.mu.Lock()
	if f.srcErr == nil {
		f.srcErr, f.srcEnd = err, time.Now()
	}
	f.mu.Unlock()
	select {
	case <-f.readDone:
	default:
		close(f.readDone)
	}
}

// sourceEnded passes the end of the source on: the destination is closed,
// as the source's writer closed it (a half-close). The end and the close
// are noted in that order, before anything the close causes (the server
// exiting on EOF).
func (f *forwarder) sourceEnded(err error) {
	dir := dirNames[f.d]
	f.mu.Lock()
	end := f.srcEnd
	f.mu.Unlock()
	if !errors.Is(err, errClosed) {
		ev := record.Event{Ev: record.EvEOF, Dir: dir, Text: srcNames[f.d] + " ended"}
		if !errors.Is(err, io.EOF) {
			ev.Text, ev.Err = "reading "+srcNames[f.d]+" failed", err.Error()
		}
		f.p.note(end, ev)
		if f.d == dIn {
			why := "the host closed the proxy's stdin"
			if ev.Err != "" {
				why = "reading the proxy's stdin failed"
			}
			f.p.endSession(end, why)
		}
	}
	// The server's exit that the close causes (stdin's EOF) is noted
	// after it: sigMu keeps waitServer from noting it in between, where
	// the observer could take the exit before the close.
	f.p.sigMu.Lock()
	defer f.p.sigMu.Unlock()
	at := time.Now() // before the close: what it causes comes after
	cerr := f.closeDst()
	f.mu.Lock()
	f.closedDst = cerr == nil
	f.mu.Unlock()
	if cerr == nil && !errors.Is(err, errClosed) {
		f.p.note(at, record.Event{Ev: record.EvClose, Dir: dir, Text: "closed " + dstNames[f.d] + " to pass the end on"})
	}
}

// writeFailed passes a failed write back: the destination's reader went
// away (EPIPE) or the write was interrupted. The source is closed, so its
// writer sees the same failure it would have seen without the proxy.
func (f *forwarder) writeFailed(err error) {
	now := time.Now()
	f.mu.Lock()
	f.dstErr, f.dstErrAt = err, now
	f.mu.Unlock()
	ev := record.Event{Ev: record.EvClose, Dir: dirNames[f.d], Err: err.Error(), Text: fmt.Sprintf("writing %s failed", dstNames[f.d])}
	select {
	case <-f.p.stop:
		f.p.note(now, ev)
		return // the proxy is ending and interrupted the write itself
	default:
	}
	if f.d == dIn {
		f.p.unwatch(dIn) // the host's stdin
	}
	cerr := closeStream(f.src)
	f.mu.Lock()
	f.closedSrc = cerr == nil
	f.mu.Unlock()
	if cerr == nil {
		ev.Text += fmt.Sprintf("; closed %s to pass it back", srcNames[f.d])
	}
	f.p.note(now, ev)
}

// closeDst closes the destination; the host's stdout or stderr stops
// being watched first (see sessionend.go).
func (f *forwarder) closeDst() error {
	if f.d != dIn {
		f.p.unwatch(f.d)
	}
	return closeStream(f.dst)
}

// closeStream closes s if it can be closed.
func closeStream(s any) error {
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return errors.ErrUnsupported
}

type readDeadliner interface{ SetReadDeadline(time.Time) error }
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// canInterrupt reports whether a blocked read of src can be ended: it has
// read deadlines (an *os.File says so only by trying). It is asked once,
// before the first read, as trying clears a deadline already set.
func canInterrupt(src io.Reader) bool {
	d, ok := src.(readDeadliner)
	return ok && d.SetReadDeadline(time.Time{}) == nil
}

// interruptRead ends a blocked read of the source, where possible, and a
// stop fault that keeps it from reading.
func (f *forwarder) interruptRead() {
	f.haltOnce.Do(func() { close(f.halt) })
	if f.rsrc != nil {
		f.rsrc.stop()
		return
	}
	if d, ok := f.src.(readDeadliner); ok {
		if d.SetReadDeadline(time.Now()) == nil {
			return
		}
	}
	// Our own pipe ends can always be closed.
	if f.d != dIn {
		_ = closeStream(f.src)
	}
}

// interrupt ends a blocked read and a blocked write, and wakes a fault
// that stops reading.
func (f *forwarder) interrupt() {
	f.interruptRead()
	if f.rdst != nil {
		f.rdst.stop()
		return
	}
	if d, ok := f.dst.(writeDeadliner); ok && d.SetWriteDeadline(time.Now()) == nil {
		return
	}
	if f.d == dIn {
		_ = closeStream(f.dst) // our own pipe to the server
	}
}
