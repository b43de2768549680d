package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// minihost is testdata/minihost built once: the smallest host command.
var minihost struct {
	once sync.Once
	path string
	err  error
}

func buildMinihost(t *testing.T) string {
	t.Helper()
	minihost.once.Do(func() {
		minihost.path = filepath.Join(filepath.Dir(binary), "minihost")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", minihost.path, "./testdata/minihost").CombinedOutput(); err != nil {
			minihost.err = err
			t.Logf("%s", out)
		}
	})
	if minihost.err != nil {
		t.Fatalf("building testdata/minihost: %v", minihost.err)
	}
	return minihost.path
}

func TestHostProbe(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^(era-legacy|era-modern|host-timeout|crash-mid-call)$", "-host-cap", "20s",
		"-expect", "era-modern=fail", "--", host, "-timeout", "1s", "{server}")
	want := map[string]assertions.Verdict{
		"era-legacy":     assertions.Pass,
		"era-modern":     assertions.Fail, // it speaks only initialize
		"host-timeout":   assertions.Pass, // gives up after 1 s and cancels
		"crash-mid-call": assertions.Pass,
	}
	if diff := cmp.Diff(want, verdicts(res.stdout)); diff != "" || res.code != 0 {
		t.Errorf("hostprobe: exit %d, verdicts (-want +got):\n%s\nstdout:\n%s\nstderr:\n%s", res.code, diff, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "sent notifications/cancelled") {
		t.Errorf("host-timeout's evidence does not say the host cancelled:\n%s", res.stdout)
	}
}

// TestHostProbeConfig runs a config-file host: -config writes its config
// from a template before each run.
func TestHostProbeConfig(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	dir := t.TempDir()
	tmpl, cfg := filepath.Join(dir, "mcp.json.tmpl"), filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(tmpl, []byte(`{"command": {server_command_json}, "args": {server_args_json}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := mcpstdio(t, time.Minute, "hostprobe", "-json", "-run", "^junk-on-stdout$", "-config", tmpl+"="+cfg, "--", host, "-config", cfg)
	if res.code != 0 || !strings.Contains(res.stdout, `"verdict":"pass"`) {
		t.Errorf("hostprobe -config: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
}

// TestHostProbeFails: a host whose call never ends fails host-timeout at
// the cap, and hostprobe exits 1 within its documented bound (the cap, and
// -within for the host to start).
func TestHostProbeFails(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	begin := time.Now()
	res := mcpstdio(t, time.Minute, "hostprobe", "-run", "^host-timeout$", "-host-cap", "1s", "-within", "2s", "--", host, "{server}")
	if v := verdicts(res.stdout)["host-timeout"]; v != assertions.Fail || res.code != 1 {
		t.Errorf("hostprobe against a host with no timeout: exit %d, host-timeout %q, want 1 and fail\n%s\n%s", res.code, v, res.stdout, res.stderr)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Errorf("hostprobe took %v with -host-cap 1s", took)
	}
}

func TestHostProbeUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"hostprobe"}, {"hostprobe", "--"}, {"hostprobe", "-run", "nothing", "--", "x"},
		{"hostprobe", "-config", "no-such-template=x", "--", "x"}, {"hostprobe", "-expect", "stdout-clean=pass", "--", "x"}} {
		if res := mcpstdio(t, 30*time.Second, args...); res.code != 2 || !strings.Contains(res.stderr, "mcpstdio hostprobe:") {
			t.Errorf("mcpstdio %q: exit %d, stderr %q; want 2 and a usage error", args, res.code, res.stderr)
		}
	}
}
