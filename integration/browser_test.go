package integration_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

var shots = flag.String("shots", "", "save the browser tests' screenshots in `DIR` (default: the test's temporary directory, removed after it)")

// chromium returns the headless Chromium to drive, or skips t.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPSTDIO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "headless_shell", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium binary found (chromium-headless-shell, chromium, chromium-browser, headless_shell, google-chrome, or $MCPSTDIO_CHROMIUM): .ci/run installs Debian's chromium-headless-shell with apt-get")
	return ""
}

// browser starts a fresh headless Chromium for t, bounded by t's
// deadline, and returns the context of its first tab. It is stopped and
// waited for at cleanup.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	ctx, cancel, _ := bound.Context(context.Background(), t)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1300, 1000),
	)
	t.Cleanup(acancel) // waits for the browser to end
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return bctx
}

// shot saves a screenshot of the whole page as name.png.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := *shots
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Error(err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// command builds cmd/mcpstdio into t's temporary directory (the build
// cache makes the second build quick) and returns its path.
func command(t *testing.T) string {
	t.Helper()
	if cached, ok := commands.Load(t); ok {
		return cached.(string)
	}
	bin := filepath.Join(t.TempDir(), "mcpstdio")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	ctx, cancel, _ := bound.Context(context.Background(), t)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcpstdio/mcpstdio/cmd/mcpstdio").CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}
	commands.Store(t, bin)
	t.Cleanup(func() { commands.Delete(t) })
	return bin
}

var commands sync.Map // *testing.T → the command built for it

// run runs the built command to its end and returns its output and exit
// status.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel, _ := bound.Context(context.Background(), t)
	defer cancel()
	cmd := exec.CommandContext(ctx, command(t), args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mcpstdio %q: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// liveServer runs `mcpstdio status -http` on the state directory dir
// (with the flags extra) and returns the URL it printed. At cleanup it is
// interrupted, and must end with status 0.
func liveServer(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the live page is ended with an interrupt, which Windows cannot send")
	}
	ctx, cancel, _ := bound.Context(context.Background(), t)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, command(t), append(append([]string{"status", "-dir", dir}, extra...), "-http", "127.0.0.1:0")...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil {
				t.Errorf("status -http after an interrupt: %v\n%s", err, stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("status -http printed %q (%v)\n%s", url, err, stderr.String())
	}
	return strings.TrimSpace(url)
}

// TestLivePageRefuses: a request without the token is refused, in a
// browser and by a plain client; an address that is not loopback is
// refused before anything listens.
func TestLivePageRefuses(t *testing.T) {
	ctx := browser(t)
	url := liveServer(t, t.TempDir())
	base, _, _ := strings.Cut(url, "?")
	for _, u := range []string{base, base + "status.json", base + "?token=0000"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "refused") {
			t.Errorf("GET %s: %d %q, want 403 and a refusal", u, resp.StatusCode, b)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !strings.Contains(text, "refused: this request has no valid token") {
		t.Errorf("the browser without the token sees %q (%v), want the refusal", text, err)
	}
	shot(t, ctx, "live-no-token")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080"} {
		stdout, stderr, code := run(t, "status", "-dir", t.TempDir(), "-http", addr)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "not a loopback address") {
			t.Errorf("status -http %s: exit %d, stdout %q, stderr %q; want 2, nothing served, a refusal", addr, code, stdout, stderr)
		}
	}
}
