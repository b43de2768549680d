package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Pending is a request sent to the server and its response to come.
type Pending struct {
	s      *Session
	id     int64
	method string

	token     json.RawMessage // params._meta.progressToken, if any
	done      chan struct{}
	once      sync.Once
	resp      *Response
	err       error
	cancelled atomic.Bool
}

// ID returns the request's JSON-RPC id.
func (p *Pending) ID() int64 { return p.id }

// ProgressToken returns the progress token the request carried in
// params._meta.progressToken, as JSON, or nil; see Session.ProgressCount.
func (p *Pending) ProgressToken() json.RawMessage { return p.token }

// Done returns a channel closed once the response has arrived or the request
// has failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

func (p *Pending) complete(r *Response, err error) {
	p.once.Do(func() {
		p.resp, p.err = r, err
		close(p.done)
	})
}

// Wait waits for the response, bounded by ctx and the session's timeout. It
// returns the response whatever it holds, a result or a JSON-RPC error (see
// Response.Error), and an error only when no response can be had: the
// response frame was over the transport limit (the error wraps the
// *pipes.FrameTooLargeError), the request could not be written, the session
// ended, or the wait timed out (a *WaitError with a diagnosis).
func (p *Pending) Wait(ctx context.Context) (*Response, error) {
	select {
	case <-p.done:
		return p.resp, p.err
	default:
	}
	ctx, cancel := p.s.bound(ctx)
	defer cancel()
	select {
	case <-p.done:
		return p.resp, p.err
	case <-ctx.Done():
		return nil, p.s.waitError(fmt.Sprintf("waiting for the response to %s id=%d", p.method, p.id), ctx.Err())
	}
}

// Cancel sends notifications/cancelled for the request with reason. A
// response that arrives afterwards is still delivered, with Late set, and
// counted in Stats.LateResponses. Cancel returns the error of writing the
// notification.
func (p *Pending) Cancel(reason string) error {
	p.cancelled.Store(true)
	p.s.mu.Lock()
	p.s.stats.CancelsSent++
	p.s.mu.Unlock()
	params := map[string]any{"requestId": p.id}
	if reason != "" {
		params["reason"] = reason
	}
	return p.s.Notify(wire.MethodCancelled, params)
}

// Send sends a request and returns at once with its Pending; the write to
// stdin is bounded by the session timeout, and its failure is what Wait
// returns. In the modern era the _meta fields are added to params (which
// must then encode as a JSON object or be nil).
func (s *Session) Send(method string, params any) *Pending {
	return s.send(context.Background(), method, params, s.isModern())
}

// Call sends a request and waits for its response, bounded by ctx and the
// session timeout. Unlike Wait, it also returns the response's JSON-RPC error
// (a *wire.RPCError) as its error, along with the response.
func (s *Session) Call(ctx context.Context, method string, params any) (*Response, error) {
	return s.call(ctx, method, params, s.isModern())
}

func (s *Session) call(ctx context.Context, method string, params any, meta bool) (*Response, error) {
	p := s.send(ctx, method, params, meta)
	r, err := p.Wait(ctx)
	if err != nil {
		return r, err
	}
	if r.Error != nil {
		return r, r.Error
	}
	return r, nil
}

func (s *Session) send(ctx context.Context, method string, params any, meta bool) *Pending {
	p := &Pending{s: s, id: s.nextID.Add(1), method: method, done: make(chan struct{})}
	raw, err := s.encodeParams(params, meta)
	if err != nil {
		p.complete(nil, fmt.Errorf("mcptest: %s: %w", method, err))
		return p
	}
	var withMeta struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(raw, &withMeta) == nil {
		p.token = withMeta.Meta.Token
	}
	s.mu.Lock()
	if err := s.failErr; err != nil || s.closing {
		if err == nil {
			err = ErrClosed
		}
		s.mu.Unlock()
		p.complete(nil, fmt.Errorf("mcptest: %s: %w", method, err))
		return p
	}
	s.pending[p.id] = p
	if key := tokenKey(p.token); key != "" {
		if _, seen := s.progress[key]; !seen {
			s.progress[key] = 0
		}
	}
	s.stats.Requests++
	s.mu.Unlock()
	id := json.RawMessage(fmt.Sprint(p.id))
	if err := s.writeMsg(ctx, &wire.Message{ID: id, Method: method, Params: raw}); err != nil {
		if errors.Is(err, errPartialWrite) {
			// The server will get the request whole with the next write and
			// may answer it: keep it pending, so that answer is counted as
			// late rather than as an unknown id.
			p.cancelled.Store(true)
		} else {
			s.mu.Lock()
			delete(s.pending, p.id)
			s.mu.Unlock()
		}
		p.complete(nil, err)
	}
	return p
}

// Notify sends a notification, bounded by the session timeout.
func (s *Session) Notify(method string, params any) error {
	raw, err := s.encodeParams(params, false)
	if err != nil {
		return fmt.Errorf("mcptest: %s: %w", method, err)
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return fmt.Errorf("mcptest: %s: %w", method, ErrClosed)
	}
	return s.writeMsg(context.Background(), &wire.Message{Method: method, Params: raw})
}

// Ping makes the cheapest round trip of the negotiated era: ping in the
// legacy era (and when nothing was negotiated), server/discover in the modern
// one. It fails if the server answers with an error.
func (s *Session) Ping(ctx context.Context) error {
	var err error
	if s.isModern() {
		_, err = s.call(ctx, wire.MethodDiscover, nil, true)
	} else {
		_, err = s.call(ctx, wire.MethodPing, nil, false)
	}
	return err
}

func (s *Session) isModern() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modern
}

// encodeParams marshals params, adding the modern _meta fields if meta.
func (s *Session) encodeParams(params any, meta bool) (json.RawMessage, error) {
	var raw json.RawMessage
	switch p := params.(type) {
	case nil:
	case json.RawMessage:
		raw = p
	default:
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encoding params: %w", err)
		}
		raw = b
	}
	if !meta {
		return raw, nil
	}
	obj := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("params must be a JSON object to carry _meta: %w", err)
		}
	}
	m := map[string]json.RawMessage{}
	if old, ok := obj["_meta"]; ok {
		if err := json.Unmarshal(old, &m); err != nil {
			return nil, fmt.Errorf("params._meta must be a JSON object: %w", err)
		}
	}
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	if v == "" || !wire.IsModern(v) {
		v = wire.LatestVersion
	}
	set := func(k string, val any) {
		if _, ok := m[k]; !ok {
			b, _ := json.Marshal(val)
			m[k] = b
		}
	}
	set(wire.MetaProtocolVersion, v)
	set(wire.MetaClientCapabilities, map[string]any{})
	set(wire.MetaClientInfo, map[string]string{"name": s.cfg.clientName, "version": s.cfg.clientVersion})
	mb, _ := json.Marshal(m)
	obj["_meta"] = mb
	return json.Marshal(obj)
}
