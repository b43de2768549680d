// Command codexhost drives the Codex CLI's MCP client without a model, for
// mcpstdio hostprobe: it starts `codex app-server` (JSON-RPC on stdio) with
// the server it is given as the MCP server "fake", and asks it, as an IDE
// would, to initialize, start a thread and call one tool of that server
// (mcpServer/tool/call, which needs no login). It prints the result and
// exits: 0 with a result, 1 with an error. With -list it lists the server's
// tools (mcpServerStatus/list) first and prints their names, sorted, or the
// error Codex gives for the list.
//
//	codexhost -codex PATH [-tool echo] [-tool-timeout 5s] [-list] -- SERVER ARGS...
//	codexhost -codex PATH -home DIR [-server NAME] [-tool echo] [-list]
//
// Codex reads its configuration from CODEX_HOME; codexhost writes it in a
// temporary directory of its own (removed at exit): the server, and
// tool_timeout_sec from -tool-timeout (0: Codex's default). With -home,
// CODEX_HOME is DIR, whose config.toml names the servers, and the server
// called is -server's.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	codex := flag.String("codex", "codex", "the codex command")
	tool := flag.String("tool", "echo", "the tool to call")
	toolTimeout := flag.Duration("tool-timeout", 0, "the server's tool_timeout_sec (0: Codex's default)")
	list := flag.Bool("list", false, "list the server's tools before the call and print their names")
	home := flag.String("home", "", "CODEX_HOME `DIR`, whose config.toml names the servers (instead of SERVER ARGS)")
	server := flag.String("server", "fake", "the server to call, by its name in the config")
	flag.Parse()
	if (flag.NArg() == 0) == (*home == "") {
		fmt.Fprintln(os.Stderr, "usage: codexhost -codex PATH [-tool NAME] [-tool-timeout D] [-list] -- SERVER ARGS...\n       codexhost -codex PATH -home DIR [-server NAME] [-tool NAME] [-list]")
		os.Exit(2)
	}
	os.Exit(run(*codex, *home, *server, *tool, *toolTimeout, *list, flag.Args()))
}

func run(codex, home, server, tool string, toolTimeout time.Duration, list bool, argv []string) int {
	if home == "" {
		var err error
		if home, err = os.MkdirTemp("", "codexhost-"); err != nil {
			fmt.Fprintln(os.Stderr, "codexhost:", err)
			return 1
		}
		defer os.RemoveAll(home)
		if err := os.WriteFile(home+"/config.toml", config(argv, toolTimeout), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "codexhost:", err)
			return 1
		}
	}
	c, err := start(codex, home)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexhost:", err)
		return 1
	}
	code := 0
	if err := c.session(server, tool, list); err != nil {
		fmt.Fprintln(os.Stderr, "codexhost:", err)
		code = 1
	}
	if err := c.close(); err != nil {
		fmt.Fprintln(os.Stderr, "codexhost: codex app-server:", err)
	}
	return code
}

// config is Codex's config.toml with the server as "fake". A JSON string
// is a TOML basic string, and a JSON array of strings a TOML array.
func config(server []string, toolTimeout time.Duration) []byte {
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	s := fmt.Sprintf("[mcp_servers.fake]\ncommand = %s\nargs = %s\n", js(server[0]), js(server[1:]))
	if toolTimeout > 0 {
		s += fmt.Sprintf("tool_timeout_sec = %g\n", toolTimeout.Seconds())
	}
	return []byte(s)
}

// appServer is a running `codex app-server`.
type appServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	msgs   chan message // from its stdout, closed at EOF
	nextID int
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func start(codex, home string) (*appServer, error) {
	cmd := exec.Command(codex, "app-server")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &appServer{cmd: cmd, stdin: stdin, msgs: make(chan message, 64)}
	go func() {
		defer close(c.msgs)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			var m message
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.msgs <- m
			}
		}
	}()
	return c, nil
}

func (c *appServer) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// request sends method and waits for its response, answering the app
// server's own requests with an error (none is expected here).
func (c *appServer) request(method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for m := range c.msgs {
		switch {
		case m.Method != "" && m.ID != nil:
			_ = c.send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "codexhost answers no requests"}})
		case m.Method == "" && string(m.ID) == fmt.Sprint(id):
			if m.Error != nil {
				return nil, fmt.Errorf("%s: error %d: %s", method, m.Error.Code, m.Error.Message)
			}
			return m.Result, nil
		}
	}
	return nil, fmt.Errorf("%s: codex app-server closed its stdout", method)
}

func (c *appServer) session(server, tool string, list bool) error {
	if _, err := c.request("initialize", map[string]any{"clientInfo": map[string]any{"name": "codexhost", "version": "0"}}); err != nil {
		return err
	}
	if err := c.send(map[string]any{"method": "initialized"}); err != nil {
		return err
	}
	res, err := c.request("thread/start", map[string]any{"ephemeral": true})
	if err != nil {
		return err
	}
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &thread); err != nil || thread.Thread.ID == "" {
		return fmt.Errorf("thread/start: no thread id in %.200s", res)
	}
	if list {
		if err := c.listTools(server); err != nil {
			return err
		}
	}
	res, err = c.request("mcpServer/tool/call", map[string]any{"threadId": thread.Thread.ID, "server": server, "tool": tool,
		"arguments": map[string]any{"text": "hi"}})
	if err != nil {
		return err
	}
	fmt.Printf("%s\n", res)
	return nil
}

// listTools prints the names of the tools Codex took from the server, or
// returns the error it gives for the list.
func (c *appServer) listTools(server string) error {
	res, err := c.request("mcpServerStatus/list", map[string]any{})
	if err != nil {
		return err
	}
	var st struct {
		Data []struct {
			Name       string                     `json:"name"`
			Tools      map[string]json.RawMessage `json:"tools"`
			ToolsError *string                    `json:"toolsError"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res, &st); err != nil {
		return fmt.Errorf("mcpServerStatus/list: %w", err)
	}
	for _, s := range st.Data {
		if s.Name != server {
			continue
		}
		if s.ToolsError != nil {
			return fmt.Errorf("mcpServerStatus/list: %s", *s.ToolsError)
		}
		var names []string
		for n := range s.Tools {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Printf("%d tools: %s\n", len(names), strings.Join(names, " "))
		return nil
	}
	return fmt.Errorf("mcpServerStatus/list: no server %s", server)
}

// close closes the app server's stdin, which ends it, and waits for it
// (cmd.WaitDelay bounds the wait once it has exited).
func (c *appServer) close() error {
	_ = c.stdin.Close()
	go func() {
		for range c.msgs { // keep its stdout read until it ends
		}
	}()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("still running 10s after its stdin closed: killed (%v)", <-done)
	}
}
