// Package testserver is the MCP server mcptest's own tests run, in process
// and as a child: the test binary itself (mcptest.Helper) or, under the
// race detector, ../../testdata/testserver built without it.
package testserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mcpstdio/mcpstdio/wire"
)

// testServer is a naive MCP server, one goroutine: it reads a line, handles
// it, writes the answer in one Write and only then reads the next line: the
// server that back-pressure freezes. Options:
//
//	legacy (default)  initialize handshake; server/discover → -32601
//	modern            server/discover; initialize → -32601; no ping
//	silent-probe      legacy, and never answers server/discover
//	ignore-eof        on stdin EOF, wait for the end (block) instead of returning
//	ignore-sigterm    (child) ignore SIGTERM
//	no-read           never read stdin, wait for the end (block)
//	stderr=N          write N bytes to stderr before serving
//
// Tools (tools/call name): echo {text}, big {size, idLast}, junk, notify,
// flood {n}, ping-host, wait-cancel, unknown-id, close-stdout,
// exit-mid-frame, request-flood {n}.
type testServer struct {
	opts   map[string]string
	child  bool
	ctx    context.Context
	in     *bufio.Reader
	out    io.WriteCloser
	errw   io.Writer
	closed bool
}

// New returns the server with args (options, "k=v" or "k") as a serve
// function, as mcptest.ServeFunc; child is true where it is a process of
// its own (it may then ignore SIGTERM, block until a signal, exit).
func New(args []string, child bool) func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
	opts := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		opts[k] = v
	}
	return func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
		s := &testServer{opts: opts, child: child, ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, errw: errw}
		return s.serve()
	}
}

// errStop makes the server return (a child exits) at once.
var errStop = errors.New("stop")

func (s *testServer) has(k string) bool { _, ok := s.opts[k]; return ok }

func (s *testServer) serve() error {
	if s.has("ignore-sigterm") && s.child {
		ignoreSIGTERM()
	}
	if n, err := strconv.Atoi(s.opts["stderr"]); err == nil {
		chunk := []byte(strings.Repeat("e", 64<<10-1) + "\n")
		for i := 0; i < n; i += len(chunk) {
			if _, err := s.errw.Write(chunk); err != nil {
				return err
			}
		}
	}
	if s.has("no-read") {
		s.block()
		return nil
	}
	if n, err := strconv.Atoi(s.opts["junk"]); err == nil {
		// A server that logs to stdout at start-up, all in one burst.
		var b bytes.Buffer
		for i := range n {
			fmt.Fprintf(&b, "starting up: step %d of %d\n", i+1, n)
		}
		if _, err := s.out.Write(b.Bytes()); err != nil {
			return err
		}
	}
	for {
		line, err := s.in.ReadBytes('\n')
		if err != nil {
			return s.eof()
		}
		var m wire.Message
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintf(s.errw, "bad line: %v\n", err)
			continue
		}
		if err := s.handle(&m); err == errStop {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func (s *testServer) eof() error {
	if !s.has("ignore-eof") {
		return nil
	}
	s.block()
	return nil
}

// block waits for the end: a signal in a child, ctx in process. A child
// waits for a signal even where ctx has a deadline: without one (go test
// -timeout 0) nothing could end ctx, and a process whose only goroutine
// waits on it is ended by the runtime's deadlock detector (exit 2) before
// the test can see it not read.
func (s *testServer) block() {
	if s.child {
		blockUntilSignal()
		return
	}
	<-s.ctx.Done()
}

func (s *testServer) send(v any) error {
	if s.closed {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.out.Write(append(b, '\n'))
	return err
}

func (s *testServer) result(id json.RawMessage, result any) error {
	return s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *testServer) fail(id json.RawMessage, code int, msg string) error {
	return s.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func text(t string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}}
}

func (s *testServer) handle(m *wire.Message) error {
	if m.ID == nil { // notification
		return nil
	}
	modern := s.has("modern")
	switch m.Method {
	case wire.MethodInitialize:
		if modern {
			return s.fail(m.ID, wire.CodeMethodNotFound, "initialize is not supported in "+wire.Version20260728)
		}
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		v := p.ProtocolVersion
		if v != wire.Version20251125 && v != wire.Version20250618 {
			v = wire.Version20251125
		}
		return s.result(m.ID, map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "test", "version": "1"}})
	case wire.MethodDiscover:
		if s.has("silent-probe") {
			return nil
		}
		if !modern {
			return s.fail(m.ID, wire.CodeMethodNotFound, "method not found")
		}
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Meta[wire.MetaProtocolVersion] != wire.Version20260728 {
			return s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": wire.CodeUnsupportedProtocolVersion, "message": "Unsupported protocol version", "data": map[string]any{"supported": []string{wire.Version20260728}, "requested": p.Meta[wire.MetaProtocolVersion]}}})
		}
		return s.result(m.ID, map[string]any{"resultType": "complete", "supportedVersions": []string{wire.Version20260728}, "capabilities": map[string]any{"tools": map[string]any{}}, "ttlMs": 0, "cacheScope": "private"})
	case wire.MethodPing:
		if modern {
			return s.fail(m.ID, wire.CodeMethodNotFound, "ping was removed in "+wire.Version20260728)
		}
		return s.result(m.ID, map[string]any{})
	case wire.MethodToolsCall:
		return s.tool(m)
	}
	return s.fail(m.ID, wire.CodeMethodNotFound, "method not found: "+m.Method)
}

func (s *testServer) tool(m *wire.Message) error {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text   string `json:"text"`
			Size   int    `json:"size"`
			N      int    `json:"n"`
			IDLast bool   `json:"idLast"`
			Exit   bool   `json:"exit"`
			Kind   string `json:"kind"`
		} `json:"arguments"`
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return s.fail(m.ID, wire.CodeInvalidParams, err.Error())
	}
	if s.has("modern") && p.Meta[wire.MetaProtocolVersion] == nil {
		return s.fail(m.ID, wire.CodeInvalidRequest, "_meta missing protocolVersion")
	}
	a := p.Arguments
	switch p.Name {
	case "echo":
		return s.result(m.ID, text(a.Text))
	case "big":
		// One Write of the whole response: the writer blocks until the
		// host has read all of it.
		// Built by hand: encoding/json is slow on 8 MiB under -race.
		payload := bytes.Repeat([]byte("x"), a.Size)
		var b []byte
		if a.IDLast {
			b = fmt.Appendf(nil, `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"%s"}]},"id":%s}`+"\n", payload, m.ID)
		} else {
			b = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`+"\n", m.ID, payload)
		}
		_, err := s.out.Write(b)
		return err
	case "junk":
		if _, err := s.out.Write([]byte("server starting... this is a log line on stdout\n")); err != nil {
			return err
		}
		return s.result(m.ID, text("after junk"))
	case "notify":
		if err := s.send(map[string]any{"jsonrpc": "2.0", "method": wire.MethodMessage, "params": map[string]any{"level": "info", "data": a.Text}}); err != nil {
			return err
		}
		return s.result(m.ID, text("notified"))
	case "flood", "request-flood":
		if p.Name == "request-flood" {
			if err := s.send(map[string]any{"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}); err != nil {
				return err
			}
		}
		for i := range a.N {
			if err := s.send(map[string]any{"jsonrpc": "2.0", "method": wire.MethodProgress, "params": map[string]any{"progressToken": 1, "progress": i}}); err != nil {
				return err
			}
		}
		if a.Exit {
			return errStop
		}
		return s.result(m.ID, text("flooded"))
	case "ping-host":
		if err := s.send(map[string]any{"jsonrpc": "2.0", "id": "s1", "method": "ping"}); err != nil {
			return err
		}
		reply, err := s.readUntil(func(r *wire.Message) bool { return string(r.ID) == `"s1"` && r.Method == "" })
		if err != nil {
			return err
		}
		b, _ := json.Marshal(reply)
		return s.result(m.ID, text(string(b)))
	case "wait-cancel":
		_, err := s.readUntil(func(r *wire.Message) bool {
			if r.Method != wire.MethodCancelled {
				return false
			}
			var c struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(r.Params, &c)
			return string(c.RequestID) == string(m.ID)
		})
		if err != nil {
			return err
		}
		return s.result(m.ID, text("finished anyway")) // late
	case "unknown-id":
		if err := s.result(json.RawMessage("987654"), text("nobody asked")); err != nil {
			return err
		}
		return s.result(m.ID, text("real"))
	case "burst":
		// The response and n notifications after it, in one write.
		b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"burst"}]}}`+"\n", m.ID)
		for i := range a.N {
			b = fmt.Appendf(b, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line %d"}}`+"\n", i)
		}
		_, err := s.out.Write(b)
		return err
	case "notes":
		// n notifications of about size bytes (progress for the request's
		// token), written in large chunks, then the result.
		tok := p.Meta["progressToken"]
		tb, _ := json.Marshal(tok)
		pad := strings.Repeat("p", max(0, a.Size-100))
		var b []byte
		for i := range a.N {
			b = fmt.Appendf(b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"message":"%s"}}`+"\n", tb, i, pad)
			if len(b) >= 256<<10 || i == a.N-1 {
				if _, err := s.out.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
		if a.Exit {
			return errStop
		}
		return s.result(m.ID, text("noted"))
	case "srq":
		// n server-to-host requests in one write, then the result.
		var b []byte
		for i := range a.N {
			b = fmt.Appendf(b, `{"jsonrpc":"2.0","id":"s%d","method":"roots/list"}`+"\n", i)
		}
		if _, err := s.out.Write(b); err != nil {
			return err
		}
		return s.result(m.ID, text("asked"))
	case "badid":
		// An answer the host cannot route, of the given kind.
		body := `"result":{"content":[{"type":"text","text":"bad id"}]}`
		var line string
		switch a.Kind {
		case "string":
			line = fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s",%s}`, m.ID, body)
		case "float":
			line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s.0,%s}`, m.ID, body)
		case "exp":
			line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%se0,%s}`, m.ID, body)
		case "batch":
			line = fmt.Sprintf(`[{"jsonrpc":"2.0","id":%s,%s}]`, m.ID, body)
		case "dup":
			line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s,"id":987}`, m.ID, body)
		case "dup-oversized":
			line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"t":"%s"},"id":987}`, m.ID, strings.Repeat("x", a.Size))
		}
		return s.sendRaw(line)
	case "close-stdout":
		s.closed = true
		return s.out.Close()
	case "exit-mid-frame":
		if _, err := fmt.Fprintf(s.out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"te`, m.ID); err != nil {
			return err
		}
		if s.child {
			os.Exit(3)
		}
		return fmt.Errorf("exited mid-frame")
	}
	return s.fail(m.ID, wire.CodeInvalidParams, "unknown tool "+p.Name)
}

func (s *testServer) sendRaw(line string) error {
	_, err := s.out.Write([]byte(line + "\n"))
	return err
}

// readUntil reads stdin until a message matches.
func (s *testServer) readUntil(match func(*wire.Message) bool) (*wire.Message, error) {
	for {
		line, err := s.in.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var r wire.Message
		if json.Unmarshal(line, &r) == nil && match(&r) {
			return &r, nil
		}
	}
}
