package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// TestStatusRefusesPlantedFallbackDir: another local user (nobody, through
// setpriv) makes $TMPDIR/mcpstdio-<uid> first and plants a status file in
// it, updated far in the future, whose log is /etc/shadow. `status` lists
// nothing from it, and says which directory it refused and whose it is;
// naming the planted file itself is refused too.
func TestStatusRefusesPlantedFallbackDir(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to act as a second user (setpriv --reuid 65534)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to act as a second user")
	}
	tmp, err := os.MkdirTemp("", "mcpstdio-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	os.Chmod(tmp, 0o1777)
	planted := filepath.Join(tmp, "mcpstdio-0")
	script := `mkdir -m 0700 "$1" && printf '{"proxy_pid":1,"argv":["planted"],"start":"2999-01-01T00:00:00Z","updated":"2999-01-01T00:00:00Z","log":"/etc/shadow"}' > "$1/x.status.json" && chmod 0644 "$1/x.status.json"`
	if out, err := exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", "sh", "-c", script, "sh", planted).CombinedOutput(); err != nil {
		t.Fatalf("setpriv as nobody: %v: %s", err, out)
	}
	env := []string{"TMPDIR=" + tmp, state.EnvStateDir + "=" + t.TempDir()}
	r := resultOf(cmdtest.Run(t, time.Minute, env, nil, binary, "status", "-all"))
	if strings.Contains(r.stdout, "planted") || !strings.Contains(r.stdout, "no running mcpstdio proxy") {
		t.Errorf("status lists the planted proxy:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, planted) || !strings.Contains(r.stderr, "uid 65534") {
		t.Errorf("status does not say which directory it refused and whose it is: stderr %q", r.stderr)
	}
	r = resultOf(cmdtest.Run(t, time.Minute, env, nil, binary, "status", "-all", filepath.Join(planted, "x.status.json")))
	if strings.Contains(r.stdout, "planted") || !strings.Contains(r.stderr, "uid 65534") {
		t.Errorf("status FILE of the planted file: stdout %q, stderr %q; want a refusal naming its owner", r.stdout, r.stderr)
	}
}

// TestStatusLiveLogOutsideDir: the live page is given no record to read
// for a status file whose log is not in the status file's directory (a
// file of someone else's choosing, or a symbolic link out), and says why;
// one whose log is in it is read.
func TestStatusLiveLogOutsideDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.ndjson")
	os.WriteFile(secret, []byte("x\n"), 0o600)
	inside := filepath.Join(dir, "rec.ndjson")
	os.WriteFile(inside, nil, 0o600)
	now := time.Now()
	for name, log := range map[string]string{"a": secret, "b": inside} {
		st := state.Status{Log: log}
		st.ProxyPID, st.Start, st.Updated = 1, now, now
		if err := state.WriteStatus(filepath.Join(dir, name+state.StatusSuffix), st); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := statusLister([]string{dir}, nil, false)(now)
	if err != nil || len(ps) != 2 {
		t.Fatalf("statusLister: %d proxies, %v", len(ps), err)
	}
	for _, p := range ps {
		st := p.Status.(state.Status)
		switch st.Log {
		case secret:
			if p.Log != "" || !strings.Contains(strings.Join(st.Problems, "; "), "is not read") {
				t.Errorf("log outside the directory: given %q to read, problems %q; want none, and why", p.Log, st.Problems)
			}
		case inside:
			if p.Log != inside {
				t.Errorf("log in the directory: given %q to read, want %q", p.Log, inside)
			}
		}
	}
}
