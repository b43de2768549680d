package fakeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// respond writes w's response frame unless w was cancelled before writing
// began.
func (s *Server) respond(w *work, f *frame) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writePrelude(w.plan)
	suppress := false
	if w.ctx.Err() != nil && !w.cancelled && s.eofCancel.Load() {
		f = errorFrame(w.rawID, codeRequestCancelled, "stdin reached EOF: request cancelled", nil)
	}
	s.update(func(r *Report) {
		suppress = f == nil || (w.ctx.Err() != nil && !(s.cfg.faults.RespondAfterCancel && w.cancelled) && !s.eofCancel.Load())
		if suppress {
			w.suppressed = true
			return
		}
		w.state, r.Requests[w.reqIdx].State = StateWriting, StateWriting
	})
	if suppress {
		s.afterFrame(w.plan)
		return
	}
	n, cut := s.writeFrame(w.ctx, f, w.plan)
	s.mu.Lock()
	w.respBytes, w.cut = n, cut
	s.mu.Unlock()
	s.afterFrame(w.plan)
	s.idleNotifications(w)
}

// loose writes a frame that belongs to no running work (an error for a bad
// message), or just the faults planned for a message that gets no response.
func (s *Server) loose(f *frame, plan faultPlan) {
	if f == nil && plan.empty() {
		return
	}
	do := func() {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		s.writePrelude(plan)
		if f != nil {
			s.writeFrame(context.Background(), f, plan)
		}
		s.afterFrame(plan)
	}
	if s.cfg.faults.NaiveLoop {
		do()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.catch("the reply to message " + strconv.Itoa(plan.n))
		do()
	}()
}

// frame is one serialized message ready to write. Bytes buf[bodyStart:bodyEnd]
// may be cut short by a cancel: cut returns the first position at or after
// rel (relative to bodyStart) where the body can end so that buf[bodyEnd:]
// still closes it validly.
type frame struct {
	buf                []byte // without the newline
	bodyStart, bodyEnd int
	cut                func(rel int) int
	chunk              int // bytes per stdout Write; 0 writes the frame at once
}

// rawNewlinePrefix is where Faults.RawNewline breaks a frame: after `{"jsonrpc":"2.0",`.
var rawNewlinePrefix = []byte(`{"jsonrpc":"2.0",`)

// writeFrame writes f and its newline in chunks, with the faults of plan.
// s.wmu must be held. If ctx is cancelled while the body is being written,
// the body is cut at the next valid point and the frame closed. It returns
// the bytes written and whether the frame was cut.
func (s *Server) writeFrame(ctx context.Context, f *frame, plan faultPlan) (int64, bool) {
	buf, bs, be := f.buf, f.bodyStart, f.bodyEnd
	if plan.rawNewline && bytes.HasPrefix(buf, rawNewlinePrefix) {
		at := len(rawNewlinePrefix)
		nb := make([]byte, 0, len(buf)+2)
		nb = append(append(append(nb, buf[:at]...), '\n'), buf[at:]...)
		buf = nb
		if bs >= at {
			bs, be = bs+1, be+1
		}
	}
	if !plan.noNewline {
		buf = append(buf[:len(buf):len(buf)], '\n')
	}
	chunk := f.chunk
	if chunk <= 0 {
		chunk = len(buf)
	}
	var n int64
	pos, cut := 0, false
	for pos < len(buf) {
		if !cut && f.cut != nil && pos < be && ctx.Err() != nil {
			end := bs
			if pos > bs {
				end = bs + f.cut(pos-bs)
			}
			rest := append(append([]byte(nil), buf[pos:end]...), buf[be:]...)
			buf, pos, cut = rest, 0, true
			continue
		}
		end := min(pos+chunk, len(buf))
		k, err := s.out.write(buf[pos:end])
		n += int64(k)
		if err != nil {
			return n, cut
		}
		pos = end
	}
	return n, cut
}

// outWriter counts and times stdout writes. write is called with s.wmu held;
// close may be called at any time to unblock it.
type outWriter struct {
	s  *Server
	w  io.WriteCloser
	mu sync.Mutex // guards closed, written
	// closed is set once stdout is closed on purpose.
	closed  bool
	written int64
}

var errStdoutClosed = errors.New("fakeserver: stdout closed")

func (o *outWriter) write(p []byte) (int, error) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		o.s.countWrite(0, 0, errStdoutClosed)
		return 0, errStdoutClosed
	}
	limit := o.s.cfg.faults.ExitAfterBytes
	exitNow := false
	if limit > 0 && o.written+int64(len(p)) >= limit {
		p = p[:limit-o.written]
		exitNow = true
	}
	o.mu.Unlock()
	start := time.Now()
	n, err := o.w.Write(p)
	d := time.Since(start)
	o.mu.Lock()
	o.written += int64(n)
	o.mu.Unlock()
	o.s.countWrite(int64(n), d, err)
	if err != nil {
		o.s.crashOnBrokenPipe(err)
	}
	if exitNow {
		o.close()
		o.s.exit(fmt.Errorf("%w: ExitAfterBytes %d reached", ErrExited, limit))
		if err == nil {
			err = ErrExited
		}
	}
	return n, err
}

func (o *outWriter) close() {
	o.mu.Lock()
	already := o.closed
	o.closed = true
	o.mu.Unlock()
	if !already {
		o.w.Close()
	}
}

func (s *Server) countWrite(n int64, d time.Duration, err error) {
	s.update(func(r *Report) {
		r.StdoutWrites++
		r.StdoutBytes += n
		r.StdoutBlocked += d
		r.StdoutLongestBlock = max(r.StdoutLongestBlock, d)
		if err != nil {
			r.StdoutWriteErrors++
		}
	})
}
