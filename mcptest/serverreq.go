package mcptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/mcpstdio/mcpstdio/wire"
)

// serverRequest is a request from the server waiting for the handler.
type serverRequest struct {
	msg  *wire.Message // owns its bytes
	size int64
}

// serverRequestLocked queues a request from the server for the handler
// goroutine, or drops it, counted, when that queue is full: the stdout
// reader never waits for a handler. s.mu held.
func (s *Session) serverRequestLocked(msg *wire.Message, size int) {
	if s.echoedLocked(msg) {
		return
	}
	s.stats.ServerRequests++
	if s.modern {
		s.stats.ProtocolViolations++
		s.logLocked("protocol violation: server sent request %q in the %s era", msg.Method, s.version)
	}
	l := s.cfg.limits
	owned := &wire.Message{JSONRPC: "2.0", ID: bytes.Clone(msg.ID), Method: msg.Method, Params: bytes.Clone(msg.Params)}
	if s.srqBytes+int64(size) <= l.ServerRequestBytes || s.srqBytes == 0 {
		select {
		case s.srq <- serverRequest{msg: owned, size: int64(size)}:
			s.srqBytes += int64(size)
			return
		default:
		}
	}
	s.stats.ServerRequestsDropped++
	s.logLocked("server request %q id=%s dropped unanswered: %d requests (%d bytes) already wait for the handler (Limits.ServerRequests %d, ServerRequestBytes %d)",
		msg.Method, msg.ID, len(s.srq), s.srqBytes, l.ServerRequests, l.ServerRequestBytes)
	s.overflowLocked("server requests", l.ServerRequests)
}

// echoedLocked reports whether msg is one of the host's own pending requests
// sent back, as a program that copies stdin to stdout (cat) does, and if so
// fails that request with an error that says so rather than answering the
// echo, which the program would echo again. s.mu held.
func (s *Session) echoedLocked(msg *wire.Message) bool {
	id, ok := msg.IntID()
	if !ok {
		return false
	}
	p := s.pending[id]
	// Only before the server has sent any response: a real server may send
	// its own request (a ping) whose id happens to match one of the host's,
	// and an echoing program never answers anything.
	if p == nil || p.method != msg.Method || s.stats.Responses > 0 || s.stats.UnknownIDs > 0 {
		return false
	}
	s.stats.ServerRequests++
	s.logLocked("the server sent the host's own request back: %s id=%d", msg.Method, id)
	s.failLocked(id, errors.New("the server sent this very request back instead of answering it: it echoes its stdin, it is not an MCP server"))
	return true
}

// serveServerRequests answers the server's requests, one at a time, off the
// stdout reader: the handler is test code and may block.
func (s *Session) serveServerRequests() {
	defer s.wg.Done()
	for {
		select {
		case r := <-s.srq:
			s.mu.Lock()
			s.srqBytes -= r.size
			modern := s.modern
			s.mu.Unlock()
			s.answer(r.msg, modern)
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Session) answer(msg *wire.Message, modern bool) {
	var result any
	var err error
	switch {
	case modern:
		err = &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "servers must not send requests on stdio in protocol " + wire.LatestVersion}
	case s.cfg.serverRequests != nil:
		result, err = s.callHandler(msg)
	case msg.Method == wire.MethodPing:
		result = json.RawMessage("{}")
	default:
		err = &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "method not found: " + msg.Method}
	}
	ctx, cancel := s.bound(s.ctx)
	defer cancel()
	if err := s.writeRaw(ctx, "response to "+msg.Method, appendReply(nil, msg.ID, result, err)); err != nil {
		s.logf("answering server request %q: %v", msg.Method, err)
	}
}

// callHandler runs the WithServerRequests handler, recovering a panic: the
// test binary goes on, the server gets -32603, and Close reports the panic
// with its stack.
func (s *Session) callHandler(msg *wire.Message) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			report := fmt.Sprintf("mcptest: the WithServerRequests handler panicked answering %s id=%s: %v\n%s", msg.Method, msg.ID, v, debug.Stack())
			s.mu.Lock()
			s.panics = append(s.panics, report)
			s.logLocked("the WithServerRequests handler panicked answering %s id=%s: %v", msg.Method, msg.ID, v)
			s.mu.Unlock()
			result, err = nil, &wire.RPCError{Code: wire.CodeInternalError, Message: fmt.Sprintf("mcptest: the host's handler panicked: %v", v)}
		}
	}()
	return s.cfg.serverRequests(s.ctx, msg)
}
