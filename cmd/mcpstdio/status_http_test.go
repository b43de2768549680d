package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// TestStatusHTTPRefusesNonLoopback: -http on an address that is not
// loopback is refused before anything listens.
func TestStatusHTTPRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080", "example.com:80"} {
		r := mcpstdio(t, time.Minute, "status", "-dir", t.TempDir(), "-http", addr)
		if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") || r.stdout != "" {
			t.Errorf("status -http %s: exit %d, stdout %q, stderr %q; want 2 and a refusal", addr, r.code, r.stdout, r.stderr)
		}
	}
}

// livePage runs `status -http` on the state directory dir and returns the
// URL it prints; the server is interrupted and waited for at cleanup.
func livePage(t *testing.T, dir string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("ending the live page with an interrupt is Unix only")
	}
	// Not t.Context(): it ends before the cleanup, which interrupts the
	// server and checks that it ends well.
	ctx, cancel := context.WithTimeout(context.Background(), cmdtest.Bound(t))
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary, "status", "-dir", dir, "-http")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("status -http after an interrupt: %v", err)
		}
	})
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("status -http printed %q, %v", url, err)
	}
	go io.Copy(io.Discard, out)
	return strings.TrimSpace(url)
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestPagesHideSecrets: a session whose server has a secret in its
// environment and whose host sends a password and an API key: neither the
// live page, its JSON, nor show in any form shows them; the redaction
// marker is there instead. A request without the token is refused.
func TestPagesHideSecrets(t *testing.T) {
	t.Parallel()
	const envSecret, password, apiKey = "envval-7f3a9c", "hunter2-xyz", "sk-live-4b1d"
	dir := t.TempDir()
	log := filepath.Join(dir, "rec.ndjson")
	r := startProxy(t, []string{"MCPSTDIO_TEST_SECRET=" + envSecret}, "proxy", "-dir", dir, "-log", log, "-log-bodies", "--", binary, "fake")
	r.call(t, ping)
	r.call(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"visible","password":"`+password+`","api_key":"`+apiKey+`"}}}`)
	secret := func(where, s string) {
		t.Helper()
		for _, v := range []string{envSecret, password, apiKey} {
			if strings.Contains(s, v) {
				t.Errorf("%s shows %q", where, v)
			}
		}
	}
	url := livePage(t, dir)
	base, token, _ := strings.Cut(url, "?token=")
	if code, body := fetch(t, base); code != http.StatusForbidden {
		t.Errorf("page without the token: %d %.200q, want 403", code, body)
	}
	if code, _ := fetch(t, base+"status.json"); code != http.StatusForbidden {
		t.Errorf("status.json without the token: %d, want 403", code)
	}
	code, body := fetch(t, url)
	if code != 200 || !strings.Contains(body, "mcpstdio status") {
		t.Fatalf("page: %d %.200q", code, body)
	}
	secret("the live page", body)
	// The status file is rewritten every second and nothing signals it:
	// poll, bounded.
	poll.Wait(t, cmdtest.Bound(t), "status.json showing id 2", func() bool {
		code, body = fetch(t, base+"status.json?token="+token)
		return strings.Contains(body, `"id":2`)
	}, func() string { return body })
	if code != 200 || !strings.Contains(body, `tools/call echo`) {
		t.Errorf("status.json: %d, want the echo call in its timeline: %.400q", code, body)
	}
	secret("status.json", body)
	r.stdin.Close()
	r.wait(t)
	show := mcpstdio(t, time.Minute, "show", log)
	secret("show", show.stdout+show.stderr)
	js := mcpstdio(t, time.Minute, "show", "-json", log)
	secret("show -json", js.stdout)
	if !strings.Contains(js.stdout, `[redacted]`) {
		t.Errorf("show -json has no redaction marker: the call's head should show where the values were")
	}
	html := mcpstdio(t, time.Minute, "show", "-html", "-", log)
	secret("show -html", html.stdout)
	raw, _ := os.ReadFile(log)
	if !strings.Contains(string(raw), "MCPSTDIO_TEST_SECRET") {
		t.Errorf("the record does not name the variable: the test did not set it")
	}
}

// TestStatusHTTPRefusesAddressWithoutNumericPort: an -http address whose
// port is not a number is an error, not a status file or a service name.
func TestStatusHTTPRefusesAddressWithoutNumericPort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"-http", "localhost:http"}, {"-http", "127.0.0.1:abc"}, {"-http=localhost:http"}, {"-http", "127.0.0.1:65536"}} {
		r := mcpstdio(t, time.Minute, append([]string{"status", "-dir", dir}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "is not a number") || r.stdout != "" {
			t.Errorf("status %s: exit %d, stdout %q, stderr %q; want 2 and the port named", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}

// TestStatusHTTPIdleConnectionsBounded: three times maxHTTPConns
// connections that send nothing (no token, no request) do not keep the
// real user's request from being answered, and the server closes all but
// maxHTTPConns of them at once rather than holding a descriptor for each
// until a timeout (the bound here is below ReadHeaderTimeout's 10 s).
func TestStatusHTTPIdleConnectionsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- runStatusHTTP(ctx, "127.0.0.1:0", func(time.Time) ([]page.Proxy, error) { return nil, nil }, pw, io.Discard)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	url, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, br)
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("runStatusHTTP returned %d", c)
		}
	}()
	url = strings.TrimSpace(url)
	host := strings.TrimPrefix(url[:strings.Index(url, "/?")], "http://")
	var closed atomic.Int64
	var wg sync.WaitGroup
	const n = 3 * maxHTTPConns
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for range n {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			io.Copy(io.Discard, c)
			closed.Add(1)
		}()
	}
	bound := min(5*time.Second, cmdtest.Bound(t))
	client := &http.Client{Timeout: bound}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("the real request with %d idle connections open: %v", n, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if resp.StatusCode != 200 {
		t.Errorf("the real request: %s", resp.Status)
	}
	poll.Wait(t, bound, fmt.Sprintf("the server closing at least %d of %d idle connections", n-maxHTTPConns, n), func() bool {
		return closed.Load() >= n-maxHTTPConns
	}, func() string { return fmt.Sprintf("%d closed", closed.Load()) })
}
