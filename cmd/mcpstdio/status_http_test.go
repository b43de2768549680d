package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
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
