package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// TSSDKVersion is the version of the official TypeScript SDK
// (@modelcontextprotocol/sdk) that ts/package-lock.json pins.
const TSSDKVersion = "1.32.2"

// EverythingVersion is the version of @modelcontextprotocol/server-everything
// that ts/package-lock.json pins.
const EverythingVersion = "2026.8.31"

// TSMaxBuffer is the TypeScript SDK's stdio limit, the same for its server
// and client transports: STDIO_DEFAULT_MAX_BUFFER_SIZE, 10 MiB, on the bytes
// buffered while a line is incomplete (shared/stdio.js ReadBuffer.append).
// Past it the transport closes: a server exits, a client ends the session.
const TSMaxBuffer = 10 << 20

// TSReady says why the Node project in dir (integration/ts) cannot run: no
// node on PATH, or no node_modules with the pinned SDK (run `npm ci` in
// dir). It returns nil when it can.
func TSReady(dir string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not on PATH: %w", err)
	}
	for pkg, want := range map[string]string{
		"@modelcontextprotocol/sdk":               TSSDKVersion,
		"@modelcontextprotocol/server-everything": EverythingVersion,
	} {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		if err != nil {
			return fmt.Errorf("%s is not installed (run `npm ci` in %s): %w", pkg, dir, err)
		}
		var p struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(b, &p); err != nil || p.Version != want {
			return fmt.Errorf("%s in %s is version %q, want %s (run `npm ci` there)", pkg, dir, p.Version, want)
		}
	}
	return nil
}

// TSSDKServer is the server of dir/server.mjs: the tools of GoSDKServer
// (big, slow, echo, search) on the official TypeScript SDK's McpServer and
// StdioServerTransport, run by node as a child process.
func TSSDKServer(dir string) mcptest.Target {
	return mcptest.Command("node", filepath.Join(dir, "server.mjs"))
}

// EverythingServer is @modelcontextprotocol/server-everything, the MCP
// project's reference server on the TypeScript SDK, installed in
// dir/node_modules, on stdio. Its tools differ from the other servers':
// echo ({"message"}) and trigger-long-running-operation ({"duration"
// seconds, "steps"}, progress, ignores cancellation) among them.
func EverythingServer(dir string) mcptest.Target {
	return mcptest.Command("node", filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio")
}

// TSSDKHost returns an assertions.HostFactory for a client of the official
// TypeScript SDK: dir/host.mjs runs Client over StdioClientTransport, which
// starts cmd's program with cmd's arguments and environment the way an
// application starts a server (pipes for stdin and stdout, stderr
// inherited). The Go side drives it over node's own stdio (see host.mjs).
// maxBuffer sets the transport's maxBufferSize; 0 keeps the SDK's default,
// TSMaxBuffer.
//
// cmd itself is never started: node starts its program. So the battery's
// context does not kill the server; Close does, after the client's own
// shutdown (stdin closed, then SIGTERM, then SIGKILL, 2 s apart).
func TSSDKHost(dir string, maxBuffer int) assertions.HostFactory {
	return func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
		args := []string{filepath.Join(dir, "host.mjs")}
		if maxBuffer > 0 {
			args = append(args, "--max-buffer", strconv.Itoa(maxBuffer))
		}
		args = append(args, "--", cmd.Path)
		args = append(args, cmd.Args[1:]...)
		node := exec.Command("node", args...)
		node.Env = cmd.Env
		if node.Env == nil {
			node.Env = os.Environ()
		}
		node.Dir = cmd.Dir
		// The server inherits node's stderr: once node has exited, Wait
		// must not wait for a server that node left behind.
		node.WaitDelay = time.Second
		h := &tsHost{node: node, calls: map[int64]chan tsReply{}, ready: make(chan tsReply, 1), exited: make(chan struct{})}
		node.Stderr = &h.stderr
		stdin, stdout, err := startPiped(node)
		if err != nil {
			return nil, err
		}
		h.stdin = stdin
		go h.read(stdout)
		select {
		case r := <-h.ready:
			if r.Fatal != "" {
				_ = h.Close()
				return nil, fmt.Errorf("the TS SDK client: %s%s", r.Fatal, h.stderr.tail())
			}
			h.pid = r.PID
			return h, nil
		case <-h.exited:
			_ = h.Close()
			return nil, fmt.Errorf("the TS SDK host exited before it was ready: %v%s", h.waitErr, h.stderr.tail())
		case <-ctx.Done():
			_ = h.Close()
			return nil, fmt.Errorf("the TS SDK client did not connect: %w", ctx.Err())
		}
	}
}

// tsReply is one line from host.mjs.
type tsReply struct {
	Ready  bool            `json:"ready"`
	PID    int             `json:"pid"`
	Fatal  string          `json:"fatal"`
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

type tsHost struct {
	node   *exec.Cmd
	stdin  io.WriteCloser
	stderr tailBuffer
	pid    int // the server's, as the transport reports it

	mu      sync.Mutex
	nextID  int64
	calls   map[int64]chan tsReply
	ready   chan tsReply
	exited  chan struct{} // closed when node's stdout has ended and node was waited for
	waitErr error
	closed  bool
}

// read dispatches host.mjs's lines until its stdout ends, then waits for
// node.
func (h *tsHost) read(stdout io.Reader) {
	br := bufio.NewReader(stdout)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var r tsReply
			if json.Unmarshal(line, &r) == nil {
				h.dispatch(r)
			}
		}
		if err != nil {
			break
		}
	}
	h.waitErr = h.node.Wait()
	h.mu.Lock()
	for id, c := range h.calls {
		c <- tsReply{ID: id, Error: fmt.Sprintf("the TS SDK host exited (%v) with the call unanswered%s", h.waitErr, h.stderr.tail())}
		delete(h.calls, id)
	}
	h.mu.Unlock()
	close(h.exited)
}

func (h *tsHost) dispatch(r tsReply) {
	if r.Ready || r.Fatal != "" {
		select {
		case h.ready <- r:
		default:
		}
		return
	}
	h.mu.Lock()
	c := h.calls[r.ID]
	delete(h.calls, r.ID)
	h.mu.Unlock()
	if c != nil {
		c <- r
	}
}

func (h *tsHost) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = h.stdin.Write(append(b, '\n'))
	return err
}

// abortBound bounds the wait for host.mjs to answer a call it was told to
// abort: it rejects the call's promise at once.
const abortBound = 5 * time.Second

// CallTool asks host.mjs for client.callTool; when ctx ends first, it asks
// for the call to be aborted (the SDK then sends notifications/cancelled)
// and returns once the client has given the call up.
func (h *tsHost) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	c := make(chan tsReply, 1)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errors.New("the TS SDK host is closed")
	}
	h.nextID++
	id := h.nextID
	h.calls[id] = c
	err := h.send(map[string]any{"op": "call", "id": id, "name": name, "arguments": args})
	h.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("writing to the TS SDK host: %w", err)
	}
	var r tsReply
	select {
	case r = <-c:
	case <-ctx.Done():
		h.mu.Lock()
		_ = h.send(map[string]any{"op": "cancel", "id": id})
		h.mu.Unlock()
		// host.mjs answers an aborted call at once, or has exited.
		t := time.NewTimer(abortBound)
		defer t.Stop()
		select {
		case r = <-c:
		case <-t.C:
			return nil, fmt.Errorf("%w, and the TS SDK client had not given the call up %v after it was aborted", ctx.Err(), abortBound)
		}
		if r.Error == "" {
			return r.Result, nil
		}
		return nil, fmt.Errorf("%w (the TS SDK client: %s)", ctx.Err(), r.Error)
	}
	if r.Error != "" {
		return nil, fmt.Errorf("the TS SDK client: %s", r.Error)
	}
	return r.Result, nil
}

// Close closes the client (host.mjs's stdin), which stops the server, and
// waits for node; node gets 10 s (the client's own shutdown takes at most
// 4 s), then it and the server are killed.
func (h *tsHost) Close() error {
	h.mu.Lock()
	first := !h.closed
	h.closed = true
	h.mu.Unlock()
	if first {
		_ = h.stdin.Close()
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-h.exited:
		return nil
	case <-t.C:
	}
	// The server is node's child, which the client would have killed: it
	// may be left when node is stuck, so it goes too.
	if h.pid > 0 {
		if p, err := os.FindProcess(h.pid); err == nil {
			_ = p.Kill()
		}
	}
	_ = h.node.Process.Kill()
	<-h.exited
	err := fmt.Errorf("the TS SDK host did not exit within 10s of its stdin closing: killed%s", h.stderr.tail())
	return err
}

// tailBuffer keeps the last bytes written to it: node's stderr, which is
// also the server's (StdioClientTransport's default), and can be many
// MiB (the stderr-noise criterion).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailSize {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-tailSize:]...)
	}
	return len(p), nil
}

// tail returns the last stderr bytes as a suffix for an error, or "".
func (b *tailBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return ""
	}
	return "; the host's stderr ends: " + string(b.buf)
}
