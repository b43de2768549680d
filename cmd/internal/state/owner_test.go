package state_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// writeStatus writes a status file in dir updated at updated with log,
// and returns its path.
func writeStatus(t *testing.T, dir string, updated time.Time, log string) string {
	t.Helper()
	st := state.Status{Log: log}
	st.ProxyPID, st.Updated, st.Start = 42, updated, updated
	path := filepath.Join(dir, "a.ndjson"+state.StatusSuffix)
	if err := state.WriteStatus(path, st); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStatusRefusesWideModes: a state directory or status file that its
// group or others can write, or a status file that is a symbolic link, is
// refused with an error naming it.
func TestStatusRefusesWideModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	now := time.Now()
	dir := t.TempDir()
	path := writeStatus(t, dir, now, "")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := state.ReadStatuses(dir, now); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Errorf("ReadStatuses of a directory of mode 0777: %v, want a refusal naming it", err)
	}
	os.Chmod(dir, 0o720)
	if _, err := state.ReadStatuses(dir, now); err == nil {
		t.Errorf("ReadStatuses of a directory of mode 0720: no error")
	}
	os.Chmod(dir, 0o700)
	if ents, err := state.ReadStatuses(dir, now); err != nil || len(ents) != 1 || ents[0].Err != nil {
		t.Fatalf("ReadStatuses of a private directory: %+v, %v", ents, err)
	}
	os.Chmod(path, 0o622)
	if e := state.ReadStatus(path, now); e.Err == nil || !strings.Contains(e.Err.Error(), path) {
		t.Errorf("a status file of mode 0622: %v, want a refusal naming it", e.Err)
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "b.ndjson"+state.StatusSuffix)
	os.Symlink(path, link)
	if e := state.ReadStatus(link, now); e.Err == nil || !strings.Contains(e.Err.Error(), "not a regular file") {
		t.Errorf("a status file that is a symbolic link: %v, want a refusal", e.Err)
	}
}

// TestStatusFutureUpdated: a status file updated in the future (more than
// a clock step) is invalid, not a proxy that never goes stale.
func TestStatusFutureUpdated(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	path := writeStatus(t, dir, now.Add(100*365*24*time.Hour), "")
	if e := state.ReadStatus(path, now); e.Err == nil || !strings.Contains(e.Err.Error(), "in the future") {
		t.Errorf("updated a century ahead: err %v, stale %v; want an error", e.Err, e.Stale)
	}
	path = writeStatus(t, dir, now.Add(time.Second), "")
	if e := state.ReadStatus(path, now); e.Err != nil || e.Stale {
		t.Errorf("updated a second ahead (a clock step): err %v, stale %v; want a live proxy", e.Err, e.Stale)
	}
}

// TestStatusLogOutsideDir: a status file's log that is not a file in its
// own directory (a relative path, a path elsewhere, a symbolic link out of
// it) is not to be read, and LogErr says why; one in it may be.
func TestStatusLogOutsideDir(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	inside := filepath.Join(dir, "rec.ndjson")
	os.WriteFile(inside, nil, 0o600)
	link := filepath.Join(dir, "link.ndjson")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for _, log := range []string{secret, link, "rec.ndjson", filepath.Join(dir, "..", filepath.Base(filepath.Dir(secret)), "secret"), dir} {
		e := state.ReadStatus(writeStatus(t, dir, now, log), now)
		if e.Err != nil || e.LogErr == nil || !strings.Contains(e.LogErr.Error(), "is not read") {
			t.Errorf("log %s: LogErr %v, err %v; want it refused", log, e.LogErr, e.Err)
		}
	}
	if e := state.ReadStatus(writeStatus(t, dir, now, inside), now); e.Err != nil || e.LogErr != nil || e.Status.Log != inside {
		t.Errorf("log in the directory: Log %q, LogErr %v, err %v; want it trusted", e.Status.Log, e.LogErr, e.Err)
	}
}

// TestStatusLogRelativeDir: a directory named by a relative path (status
// -dir state) holds its records: a log in it is trusted, one outside is
// still refused.
func TestStatusLogRelativeDir(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	inside := filepath.Join(dir, "rec.ndjson")
	os.WriteFile(inside, nil, 0o600)
	writeStatus(t, dir, now, inside)
	t.Chdir(filepath.Dir(dir))
	ents, err := state.ReadStatuses(filepath.Base(dir), now)
	if err != nil || len(ents) != 1 || ents[0].Err != nil || ents[0].LogErr != nil {
		t.Fatalf("ReadStatuses(%q) of a status file whose log is in it: %+v, %v; want the log trusted", filepath.Base(dir), ents, err)
	}
	outside := filepath.Join(filepath.Dir(dir), "rec.ndjson")
	os.WriteFile(outside, nil, 0o600)
	writeStatus(t, dir, now, outside)
	if ents, _ := state.ReadStatuses(filepath.Base(dir), now); len(ents) != 1 || ents[0].LogErr == nil {
		t.Errorf("a log outside the relative directory: %+v, want it refused", ents)
	}
}

// TestStatusRefusesOtherUsersDir: a state directory and status file made
// by another user (nobody, through setpriv) are refused by ReadStatuses
// and PrivateDir with an error naming the directory and its owner: the
// other user could otherwise plant $TMPDIR/mcpstdio-<uid> first.
func TestStatusRefusesOtherUsersDir(t *testing.T) {
	dir := otherUsersDir(t)
	if _, err := state.ReadStatuses(dir, time.Now()); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("ReadStatuses of nobody's directory: %v, want a refusal naming it and uid 65534", err)
	}
	if e := state.ReadStatus(filepath.Join(dir, "x"+state.StatusSuffix), time.Now()); e.Err == nil || !strings.Contains(e.Err.Error(), "uid 65534") {
		t.Errorf("ReadStatus of nobody's file: %v, want a refusal naming its owner", e.Err)
	}
	if err := state.PrivateDir(dir); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("PrivateDir of nobody's directory: %v, want a refusal naming its owner", err)
	}
}

// otherUsersDir returns a directory of mode 0700 that user nobody (uid
// 65534) made, holding a status file of theirs, x.status.json, updated
// far in the future with a log pointing at /etc/shadow. It skips the test
// unless it runs as root with setpriv.
func otherUsersDir(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to act as a second user (setpriv --reuid 65534)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to act as a second user")
	}
	parent, err := os.MkdirTemp("", "mcpstdio-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	os.Chmod(parent, 0o777)
	dir := filepath.Join(parent, "mcpstdio-0")
	script := `mkdir -m 0700 "$1" && printf '{"proxy_pid":1,"updated":"2999-01-01T00:00:00Z","log":"/etc/shadow"}' > "$1/x.status.json" && chmod 0600 "$1/x.status.json"`
	out, err := exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", "sh", "-c", script, "sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("setpriv as nobody: %v: %s", err, out)
	}
	return dir
}
