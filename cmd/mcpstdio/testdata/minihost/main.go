// Command minihost is the smallest MCP host, for the hostprobe tests: it
// starts the server given as arguments (or, with -config FILE, the one in
// FILE's {"command": ..., "args": [...]}), negotiates the legacy era, calls
// the echo tool and exits 0 with its answer. With -timeout it gives up on
// the call after that long, sends notifications/cancelled and exits 1; with
// -handshake-timeout it does the same for initialize. -shutdown chooses how
// it ends the server: spec (close stdin, SIGTERM and SIGKILL after -grace
// each), orphan (close stdin and exit), signal-first (SIGTERM, SIGKILL,
// then close stdin), or wait (close stdin and wait: the default). -daemon
// leaves a process in a session of its own holding its stdout when it
// exits; -detach ARG leaves "sleep ARG" holding nothing of it and carrying
// none of its environment. -list lists the tools instead of calling one, -connect only pings,
// -stderr-pipe never reads the server's stderr, and -exit0 exits 0 when it
// failed, as agent CLIs' "mcp list" commands do.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 0, "give up on the call after this long (0: never)")
	config := flag.String("config", "", "read the server's command from this JSON file")
	handshake := flag.Duration("handshake-timeout", 0, "give up on initialize after this long (0: never)")
	flag.StringVar(&shutdown, "shutdown", "wait", "how to end the server: spec, orphan, signal-first or wait")
	flag.DurationVar(&grace, "grace", 500*time.Millisecond, "the wait between the steps of -shutdown")
	daemon := flag.Bool("daemon", false, "leave a setsid process holding stdout")
	detach := flag.String("detach", "", "leave `sleep ARG` fully detached: setsid, double fork, stdio on /dev/null, empty environment")
	list := flag.Bool("list", false, "list the tools instead of calling one, as a host's 'mcp list' does")
	connect := flag.Bool("connect", false, "only connect: initialize, then ping, and print \"connected\", as 'gemini mcp list' does")
	stderrPipe := flag.Bool("stderr-pipe", false, "pipe the server's stderr and never read it, as 'gemini mcp list' does")
	flag.BoolVar(&exit0, "exit0", false, "exit 0 even when it failed, saying so only in its output, as 'mcp list' commands do")
	flag.Parse()
	if *daemon {
		startDaemon()
	}
	if *detach != "" {
		startDetached(*detach)
	}
	argv := flag.Args()
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			fail(err)
		}
		var c struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			fail(err)
		}
		argv = append([]string{c.Command}, c.Args...)
	}
	if len(argv) == 0 {
		fail(fmt.Errorf("no server command"))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if *stderrPipe {
		_, _ = cmd.StderrPipe()
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	answers := make(chan map[string]json.RawMessage)
	go func() {
		defer close(answers)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] != nil && m["method"] == nil {
				answers <- m
			}
		}
	}()
	send := func(s string) { fmt.Fprintln(in, s) }
	server, stdin = cmd, in
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"minihost","version":"0"}}}`)
	var giveUpInit <-chan time.Time
	if *handshake > 0 {
		giveUpInit = time.After(*handshake)
	}
	select {
	case m, ok := <-answers:
		if !ok {
			fail(fmt.Errorf("the server ended before answering initialize"))
		}
		if m["error"] != nil {
			fail(fmt.Errorf("initialize: %s", m["error"]))
		}
	case <-giveUpInit:
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"handshake timeout"}}`)
		fail(fmt.Errorf("initialize: no answer in %v", *handshake))
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if *connect || *list {
		method, said := "ping", "connected"
		if *list {
			method, said = "tools/list", "tools/list: connected"
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q}`, method))
		if _, ok := <-answers; !ok {
			fail(fmt.Errorf("the server ended before answering %s", method))
		}
		fmt.Println(said)
		end()
		return
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	var giveUp <-chan time.Time
	if *timeout > 0 {
		giveUp = time.After(*timeout)
	}
	select {
	case m, ok := <-answers:
		if !ok {
			fail(fmt.Errorf("the server ended before answering tools/call"))
		}
		if m["error"] != nil {
			fail(fmt.Errorf("tools/call: %s", m["error"]))
		}
		fmt.Printf("tools/call echo: %s\n", strings.TrimSpace(string(m["result"])))
		end()
	case <-giveUp:
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"timeout"}}`)
		in.Close() // the server ends at EOF; one that does not read is killed
		t := time.AfterFunc(2*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		t.Stop()
		server = nil
		fail(fmt.Errorf("tools/call: no answer in %v", *timeout))
	}
}

var (
	shutdown string
	grace    time.Duration
	exit0    bool
	server   *exec.Cmd
	stdin    interface{ Close() error }
)

// end ends the server as -shutdown says.
func end() {
	if server == nil {
		return
	}
	exited := make(chan struct{})
	go func() { server.Wait(); close(exited) }()
	waited := func() bool {
		select {
		case <-exited:
			return true
		case <-time.After(grace):
			return false
		}
	}
	switch shutdown {
	case "orphan":
		stdin.Close()
	case "signal-first":
		server.Process.Signal(syscall.SIGTERM)
		if !waited() {
			server.Process.Kill()
		}
		stdin.Close()
		<-exited
	case "spec":
		stdin.Close()
		if waited() {
			return
		}
		server.Process.Signal(syscall.SIGTERM)
		if waited() {
			return
		}
		server.Process.Kill()
		<-exited
	default:
		stdin.Close()
		<-exited
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "minihost:", err)
	end()
	if exit0 {
		os.Exit(0)
	}
	os.Exit(1)
}
