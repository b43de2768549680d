package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Response is the server's answer to one request.
type Response struct {
	ID     int64
	Result json.RawMessage // nil when Error is set
	Error  *wire.RPCError
	Late   bool // arrived after the request was cancelled
	// Offset and Size place the response's frame in the server's stdout:
	// it began after Offset bytes and had Size bytes, without its
	// newline (for StallReadsAfter arithmetic).
	Offset, Size int64
}

// String names what the response carried, for evidence: `a JSON-RPC error
// -32800 "Request cancelled"`, `an isError result: "the text"` (its first
// text content block, quoted, cut to about 1 KiB) or `a result of 1048600
// bytes`.
func (r *Response) String() string {
	if r.Error != nil {
		return fmt.Sprintf("a JSON-RPC error %d %q", r.Error.Code, r.Error.Message)
	}
	if string(wire.Member(r.Result, "isError")) != "true" {
		return fmt.Sprintf("a result of %d bytes", len(r.Result))
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(r.Result, &res) == nil {
		for _, c := range res.Content {
			if c.Type == "text" {
				return "an isError result: " + strconv.Quote(cutText(c.Text, 1024))
			}
		}
	}
	return fmt.Sprintf("an isError result: %d bytes, no text content", len(r.Result))
}

// cutText keeps the head and tail of a text longer than n bytes, cut at
// rune starts, and says how much was cut between them.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*3/4, n/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail > 0 && !utf8.RuneStart(s[len(s)-tail]) {
		tail--
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", s[:head], len(s)-head-tail, s[len(s)-tail:])
}

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
	respStart atomic.Int64 // stdout offset where the response frame began; -1 until its id is seen
	respSize  atomic.Int64 // the whole response frame's bytes, once routed
}

// ID returns the request's JSON-RPC id.
func (p *Pending) ID() int64 { return p.id }

// Progress returns how many notifications/progress have arrived for the
// request's progress token (params._meta.progressToken), whether they were
// kept for TakeNotifications or dropped from its bounded store; 0 for a
// request without a token. Tokens compare as JSON values, so a server that
// writes "a&b" for the token "a\u0026b" is counted. It counts arrivals at
// the host: with reads stalled, progress the server has written waits in
// the pipe and is not counted yet.
func (p *Pending) Progress() int64 {
	key := wire.Key(p.token)
	if key == "" {
		return 0
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return p.s.progress[key]
}

// Received returns how many bytes of the request's response the host has
// read so far: the whole frame (without its newline) once it has arrived,
// the part read of one still arriving, 0 before it begins. A response is
// recognized by its top-level "id" as its bytes pass, and only in a line
// longer than 4 KiB (a shorter one is counted once it has arrived whole):
// one whose id comes after a long result (the TypeScript SDK writes its
// responses so) shows 0 until the id arrives, then every byte read from
// the frame's start. With StallReadsAfter it shows how much of a response
// was on the host's side when the test acted.
func (p *Pending) Received() int64 {
	if n := p.respSize.Load(); n > 0 {
		return n
	}
	start := p.respStart.Load()
	if start < 0 {
		return 0
	}
	return max(0, p.s.valve.BytesRead()-start)
}

// Done returns a channel closed once the response has arrived or the request
// has failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

func (p *Pending) complete(r *Response, err error) {
	p.once.Do(func() {
		p.resp, p.err = r, err
		close(p.done)
	})
}

// Wait waits for the response, bounded by ctx, the session's timeout and,
// under StartServer, the test deadline. It returns the response whatever it
// holds, a result or a JSON-RPC error (see Response.Error), and an error
// only when no response can be had: the response frame was over the
// transport limit (the error wraps the *pipes.FrameTooLargeError), the
// server answered with the id written otherwise ("2" for 2), in a batch or
// with a duplicate envelope key, or sent the request back; the request
// could not be written; the session ended or was closed (the error wraps
// ErrClosed after Close); or the wait's bound ran out (a *WaitError with a
// diagnosis). A response that arrives as the bound runs out is returned.
// Wait may be called any number of times, from any goroutine; a wait that
// timed out leaves the request pending.
func (p *Pending) Wait(ctx context.Context) (*Response, error) {
	select {
	case <-p.done:
		return p.resp, p.err
	default:
	}
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(time.Until(p.s.waitDeadline(ctx)))
	defer t.Stop()
	var err error
	select {
	case <-p.done:
		return p.resp, p.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = context.DeadlineExceeded
	}
	select {
	case <-p.done: // it arrived as the bound ran out: an answer
		return p.resp, p.err
	default:
	}
	return nil, p.s.waitError(fmt.Sprintf("waiting for the response to %s id=%d", p.method, p.id), err)
}

// Cancel sends notifications/cancelled for the request with reason ("" for
// none) and returns the error of writing it (bounded as Notify is). A
// response that arrives afterwards is still delivered, with Late set, and
// counted in Stats.LateResponses; Cancel does not wait for it.
func (p *Pending) Cancel(reason string) error {
	p.markCancelled()
	params := strconv.AppendInt([]byte(`{"requestId":`), p.id, 10)
	if reason != "" {
		params = appendString(append(params, `,"reason":`...), reason)
	}
	return p.s.Notify(wire.MethodCancelled, json.RawMessage(append(params, '}')))
}

// markCancelled notes that a cancel for p is being sent: a response after
// it is late.
func (p *Pending) markCancelled() {
	p.cancelled.Store(true)
	p.s.mu.Lock()
	p.s.stats.CancelsSent++
	p.s.mu.Unlock()
}

// Send writes a request to stdin and returns its Pending without waiting
// for the response. The write itself takes as long as the server takes to
// read it: a request larger than the pipe, or sent to a server that is not
// reading its stdin, blocks Send until it is written, at most the session
// timeout (send from another goroutine to do something meanwhile); a write
// that fails or times out is what Wait returns. A write that timed out
// part-way leaves the request pending: its rest is written first by the
// next write, so the server still gets it whole. params is encoded with
// encoding/json, except a json.RawMessage, which is sent as it is
// (compacted if it spans lines). In the modern era the _meta fields are
// added to params (which must then be a JSON object or nil); keys the
// caller set in params._meta win. Requests are numbered 1, 2, 3, … in the
// order they are sent, the handshake's included.
func (s *Session) Send(method string, params any) *Pending {
	return s.send(context.Background(), method, params, s.isModern())
}

// Call sends a request and waits for its response, bounded by ctx and the
// session timeout; ctx bounds the write too. Unlike Wait, it also returns
// the response's JSON-RPC error (a *wire.RPCError) as its error, along with
// the response.
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

// toolParams encodes tools/call params as encoding/json encodes the map
// {"name": name, "arguments": args} (keys sorted, arguments left out when
// nil), without the map: the encoder's reflection over it was a third of
// what 1,000 calls in flight cost the host.
func toolParams(name string, args any) (json.RawMessage, error) {
	var b []byte
	if args != nil {
		a, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, `{"arguments":`...), a...), ',')
	} else {
		b = append(b, '{')
	}
	b = append(b, `"name":`...)
	if plainString(name) {
		b = append(append(append(b, '"'), name...), '"')
	} else {
		q, _ := json.Marshal(name) // a string always encodes
		b = append(b, q...)
	}
	return append(b, '}'), nil
}

// plainString reports whether s is printable ASCII that encoding/json
// writes as it is, between quotes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ToolResult is a tools/call result, decoded.
type ToolResult struct {
	// Text is the text of the result's text content blocks, joined by
	// newlines.
	Text string
	// IsError reports a tool error: the tool ran and failed, which MCP
	// sends as a result, not as a JSON-RPC error.
	IsError bool
	// StructuredContent is the result's structuredContent, if any.
	StructuredContent json.RawMessage
	// Raw is the whole result as the server sent it.
	Raw json.RawMessage
}

// CallTool calls the tool name with args (encoded with encoding/json; nil
// for none) and decodes its result, bounded as Call is. A tool error is a
// result with IsError set, not an error; the error is for a call that got
// no tool result: a JSON-RPC error (*wire.RPCError), a result that is not a
// tool result, or what Call fails with.
func (s *Session) CallTool(ctx context.Context, name string, args any) (*ToolResult, error) {
	params, err := toolParams(name, args)
	if err != nil {
		return nil, fmt.Errorf("mcptest: %s: encoding params: %w", wire.MethodToolsCall, err)
	}
	r, err := s.Call(ctx, wire.MethodToolsCall, params)
	if err != nil {
		return nil, err
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return nil, fmt.Errorf("mcptest: tools/call %s id=%d: the result is not a tool result: %w (%.200s)", name, r.ID, err, r.Result)
	}
	var text []string
	for _, c := range res.Content {
		if c.Type == "text" {
			text = append(text, c.Text)
		}
	}
	return &ToolResult{Text: strings.Join(text, "\n"), IsError: res.IsError, StructuredContent: res.StructuredContent, Raw: r.Result}, nil
}

func (s *Session) send(ctx context.Context, method string, params any, meta bool) *Pending {
	p := s.newPending(s.nextID.Add(1), method)
	raw, err := s.encodeParams(params, meta)
	if err != nil {
		p.complete(nil, fmt.Errorf("mcptest: %s: %w", method, err))
		return p
	}
	if err := s.addPending(p, raw); err != nil {
		p.complete(nil, fmt.Errorf("mcptest: %s: %w", method, err))
		return p
	}
	if err := s.writeRaw(ctx, method, appendRequest(nil, p.id, method, raw)); err != nil {
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

// newPending returns the Pending of a request with id, not yet sent.
func (s *Session) newPending(id int64, method string) *Pending {
	p := &Pending{s: s, id: id, method: method, done: make(chan struct{})}
	p.respStart.Store(-1)
	return p
}

// addPending enters p in the pending table before its request is written,
// with the progress token its params carry, so that the response and the
// progress notifications find it. It fails if the session has ended or
// a request with p's id is pending.
func (s *Session) addPending(p *Pending, params json.RawMessage) error {
	if bytes.Contains(params, []byte(wire.MetaProgressToken)) {
		p.token = wire.Member(wire.Member(params, "_meta"), wire.MetaProgressToken)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ended; err != nil {
		return err
	}
	if _, dup := s.pending[p.id]; dup {
		return fmt.Errorf("mcptest: %s id=%d: a request with that id is pending", p.method, p.id)
	}
	s.pending[p.id] = p
	if key := wire.Key(p.token); key != "" {
		if _, seen := s.progress[key]; !seen {
			s.progress[key] = 0
		}
	}
	s.stats.Requests++
	return nil
}

// Notify sends a notification, bounded by the session timeout; params are
// encoded as for Send, without _meta. Like Send's, a write that timed out
// part-way is finished by the next write.
func (s *Session) Notify(method string, params any) error {
	raw, err := s.encodeParams(params, false)
	if err != nil {
		return fmt.Errorf("mcptest: %s: %w", method, err)
	}
	return s.writeRaw(context.Background(), method, appendRequest(nil, -1, method, raw))
}

// Ping makes the cheapest round trip of the negotiated era: ping in the
// legacy era (and when nothing was negotiated), server/discover in the
// modern one, bounded as Call is. It fails if the server answers with an
// error.
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

// encodeParams encodes params once, adding the modern _meta fields if meta:
// they are spliced into the encoded object, keys the caller set win.
func (s *Session) encodeParams(params any, meta bool) (json.RawMessage, error) {
	var raw json.RawMessage
	switch p := params.(type) {
	case nil:
	case json.RawMessage:
		raw = p
		if bytes.ContainsAny(raw, "\r\n") {
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				return nil, fmt.Errorf("params: %w", err)
			}
			raw = b.Bytes()
		}
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
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("params must be a JSON object to carry _meta, not %.40s", raw)
	}
	start, end := wire.MemberAt(raw, "_meta")
	if start < 0 {
		meta := append(append([]byte(`"_meta":{`), s.metaMembers(nil)...), '}')
		return splice(raw, 0, meta), nil
	}
	if raw[start] != '{' {
		return nil, fmt.Errorf("params._meta must be a JSON object, not %.40s", raw[start:end])
	}
	add := s.metaMembers(raw[start:end])
	if len(add) == 0 {
		return raw, nil
	}
	return splice(raw, start, add), nil
}

// metaMembers returns the _meta members of the modern era that obj (an
// existing _meta object, or nil) lacks, encoded as `"k":v,"k":v`.
func (s *Session) metaMembers(obj json.RawMessage) []byte {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	if !wire.IsModern(v) {
		v = wire.LatestVersion
	}
	var b []byte
	add := func(k string, val []byte) {
		if obj != nil && wire.Member(obj, k) != nil {
			return
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = append(b, val...)
	}
	add(wire.MetaProtocolVersion, appendString(nil, v))
	add(wire.MetaClientCapabilities, []byte("{}"))
	info := appendString(append(appendString([]byte(`{"name":`), s.cfg.clientName), `,"version":`...), s.cfg.clientVersion)
	add(wire.MetaClientInfo, append(info, '}'))
	return b
}

// splice inserts members into the JSON object that starts at offset at of
// b, first, right after its '{'.
func splice(b []byte, at int, members []byte) []byte {
	open := at + bytes.IndexByte(b[at:], '{')
	rest := bytes.TrimLeft(b[open+1:], " \t\r\n")
	out := make([]byte, 0, len(b)+len(members)+1)
	out = append(out, b[:open+1]...)
	out = append(out, members...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, b[open+1:]...)
}
