package fakeserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// readLoop reads stdin until it ends. It never writes stdout itself. With
// Faults.DropPendingAtEOF, the frames of a read that brought more than one
// are held until the next read: dispatched if it brings data, dropped if
// it is the end of stdin.
func (s *Server) readLoop(stdin io.Reader) error {
	fr := pipes.NewFramer(stdin, max(s.cfg.maxFrame, 1))
	var held [][]byte
	dry := false // the read that brought the held frames is used up
	for {
		frame, err := fr.Next()
		if err == nil && s.cfg.faults.EndOnCRLF && endedByCR(fr.Stats()) {
			return s.endOnCRLF(fr.Stats())
		}
		var tl *pipes.FrameTooLargeError
		oversized := errors.As(err, &tl)
		s.update(func(r *Report) {
			r.StdinBytes = fr.Stats().Bytes
			if oversized {
				r.StdinOversized++
			} else if err == nil {
				r.StdinMessages++
			}
		})
		if oversized {
			s.logf("stdin: %v", err)
			continue
		}
		if err != nil {
			if len(held) > 0 {
				s.update(func(r *Report) { r.DroppedAtEOF += len(held) })
				s.logf("stdin ended after %d messages of one read: dropped unanswered (DropPendingAtEOF)", len(held))
			}
			return err
		}
		if len(held) > 0 && dry {
			for _, f := range held {
				s.msgs++
				s.dispatch(f, s.planFor(s.msgs))
			}
			held = nil
		}
		if s.cfg.faults.DropPendingAtEOF && (len(held) > 0 || fr.Stats().Pending > 0) {
			held = append(held, bytes.Clone(frame))
			dry = fr.Stats().Pending == 0
			continue
		}
		s.msgs++
		s.dispatch(frame, s.planFor(s.msgs))
		if s.cfg.faults.StopReadingAfterHandshake && endsHandshake(frame) {
			return s.stopReading()
		}
		if s.cfg.faults.FillStdinAfterCall && isToolsCall(frame) {
			return s.fillStdin()
		}
	}
}

// dispatch handles one frame read from stdin, on the read loop: it starts a
// request's work, cancels work, or counts a response. A panic is recovered
// here so that the loop reads on.
func (s *Server) dispatch(frame []byte, plan faultPlan) {
	defer s.catch("the stdin read loop, message " + strconv.Itoa(plan.n))
	m, perr := wire.ParseMessage(frame)
	if perr != nil {
		code, msg := int64(wire.CodeParseError), "Parse error"
		if json.Valid(frame) {
			code, msg = wire.CodeInvalidRequest, "Invalid Request"
		}
		s.update(func(r *Report) { r.StdinParseErrors++ })
		s.logf("stdin: message %d: %v", plan.n, perr)
		s.loose(errorFrame(json.RawMessage("null"), code, msg, nil), plan)
		return
	}
	if s.cfg.faults.EndUnlessInitialize && plan.n == 1 && m.Method != wire.MethodInitialize {
		s.logf("the first message is %s, not initialize: ending (EndUnlessInitialize)", m.Method)
		s.out.close()
		s.exit(fmt.Errorf("%w: EndUnlessInitialize: the first message was %q", ErrExited, m.Method))
		return
	}
	switch {
	case m.IsRequest():
		s.startRequest(m, plan)
	case m.IsNotification():
		if m.Method == wire.MethodCancelled {
			s.cancelRequest(m.Params)
		}
		s.loose(nil, plan)
	default:
		s.update(func(r *Report) { r.ResponsesRead++ })
		s.loose(nil, plan)
	}
}

// startRequest registers a request's work and runs it: in a goroutine, or
// inline for the naive loop.
func (s *Server) startRequest(m *wire.Message, plan faultPlan) {
	now := time.Now()
	w := &work{id: wire.Key(m.ID), rawID: m.ID, method: m.Method, plan: plan, state: StateNotStarted}
	if len(m.Params) > 0 {
		w.perr = json.Unmarshal(m.Params, &w.params)
	}
	if v, ok := w.params.Meta[wire.MetaProtocolVersion]; ok && s.cfg.era != EraLegacy {
		w.modern = true
		if err := json.Unmarshal(v, &w.version); err != nil {
			w.version = string(v)
		}
	}
	rec := RequestRecord{ID: w.id, Method: m.Method, Arrived: now, State: StateNotStarted}
	if m.Method == wire.MethodToolsCall {
		rec.Tool = w.params.Name
	}
	dup := false
	s.update(func(r *Report) {
		if _, dup = s.works[w.id]; dup {
			rec.State, rec.Ended = StateDone, now
		} else {
			w.ctx, w.cancel = context.WithCancel(s.base)
			w.reqIdx = len(r.Requests)
			s.works[w.id] = w
		}
		r.Requests = append(r.Requests, rec)
	})
	if dup {
		s.loose(errorFrame(w.rawID, wire.CodeInvalidRequest, "duplicate id "+w.id+": a request with this id is still running", nil), plan)
		return
	}
	if s.cfg.faults.NaiveLoop {
		s.run(w)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(w)
	}()
}

// String names w's request for diagnostics: its id and method.
func (w *work) String() string { return "request " + w.id + " (" + w.method + ")" }

func (s *Server) run(w *work) {
	defer s.finish(w)
	defer s.catch(w.String()) // a panic while responding; handleRecovered catches the others
	if s.sem != nil {
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		case <-w.ctx.Done():
			s.respond(w, s.cancelledFrame(w))
			return
		}
	}
	s.setState(w, StateRunning)
	s.respond(w, s.handleRecovered(w))
}

func (s *Server) setState(w *work, st WorkState) {
	s.update(func(r *Report) { w.state, r.Requests[w.reqIdx].State = st, st })
}

// finish records the end of w's work and settles the cancels that wait for
// it.
func (s *Server) finish(w *work) {
	now := time.Now()
	s.update(func(rep *Report) {
		delete(s.works, w.id)
		s.finished[w.id] = true
		w.state = StateDone
		r := &rep.Requests[w.reqIdx]
		r.Ended, r.State = now, StateDone
		r.ResponseBytes, r.Cut, r.Suppressed = w.respBytes, w.cut, w.suppressed
		for _, i := range w.cancels {
			c := &rep.Cancels[i]
			c.Stopped, c.StoppedAfter = true, now.Sub(c.Arrived)
			c.Suppressed = w.suppressed
			c.ChildKilled, c.RemoteAborted = w.childKilled, w.remoteAborted
		}
	})
	w.cancel()
}

// cancelRequest handles notifications/cancelled on the read loop: it never
// waits on stdout.
func (s *Server) cancelRequest(params json.RawMessage) {
	id := wire.Key(wire.Member(params, "requestId"))
	if id == "" {
		s.logf("notifications/cancelled without a requestId ignored: %s", params)
		return
	}
	rec := CancelRecord{ID: id, Arrived: time.Now()}
	json.Unmarshal(wire.Member(params, "reason"), &rec.Reason) // a reason that is not a string is left out
	s.update(func(r *Report) {
		w := s.works[id]
		switch {
		case w != nil:
			rec.State = w.state
			w.cancels = append(w.cancels, len(r.Cancels))
			if !s.cfg.faults.IgnoreCancel {
				w.cancelled = true
				w.cancel()
			}
		case s.finished[id]:
			rec.State, rec.Stopped = StateDone, true
		default:
			rec.State, rec.Stopped = StateUnknown, true
		}
		r.Cancels = append(r.Cancels, rec)
	})
}
