package state_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestLogFilePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	dir := filepath.Join(t.TempDir(), "state", "mcpstdio")
	l, err := state.CreateLog(filepath.Join(dir, "a.ndjson"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "a.ndjson"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	// An existing record with a wider mode is narrowed; an existing
	// directory is left as it is: taken when only readable by others (its
	// files are 0600), refused when they may write to it (a shared 1777
	// directory was made 0700, locking every other user out of it).
	old := filepath.Join(t.TempDir(), "old.ndjson")
	os.WriteFile(old, nil, 0o644)
	l, err = state.CreateLog(old, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	open, shared := filepath.Join(t.TempDir(), "open"), filepath.Join(t.TempDir(), "shared")
	os.Mkdir(open, 0o755)
	os.Mkdir(shared, 0o777)
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := state.PrivateDir(open); err != nil {
		t.Fatal(err)
	}
	if err := state.PrivateDir(shared); err == nil || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Errorf("PrivateDir(a 1777 directory) = %v, want it refused as writable by others", err)
	}
	for path, want := range map[string]os.FileMode{old: 0o600, open: 0o755, shared: 0o777} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(state.EnvStateDir, "")
	d, err := state.DefaultDir()
	if err != nil {
		t.Skip("no home directory here:", err)
	}
	wd, _ := os.Getwd()
	if !filepath.IsAbs(d) || d == wd || !strings.HasSuffix(d, "mcpstdio") {
		t.Errorf("DefaultDir() = %q, want an absolute per-user directory, not the working directory", d)
	}
	t.Setenv(state.EnvStateDir, "/elsewhere")
	if d, _ := state.DefaultDir(); d != "/elsewhere" {
		t.Errorf("DefaultDir() with %s set = %q", state.EnvStateDir, d)
	}
}

// TestRecordRotation: a record over its size limit continues in a new file
// that starts with the header; old files beyond keep are removed, and the
// files read in order continue the sequence.
func TestRecordRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	l, err := state.CreateLog(path, 4000, 2)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(l, `{"seq":0,"t":0,"ev":"header","header":{"v":1,"schema":"mcpstdio-proxy-record","part":0}}`+"\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(l, `{"seq":%d,"t":%d,"ev":"frame","dir":"in","n":40,"kind":"request","method":"ping","head":"%s"}`+"\n", i, i*10, strings.Repeat("x", 40))
	}
	l.Close()
	files := record.Files(path)
	if want := []string{path + ".2", path + ".1", path}; !slices.Equal(files, want) {
		t.Fatalf("record.Files = %q, want %q", files, want)
	}
	next, part := int64(-1), -1
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4000+1000 {
			t.Errorf("%s has %d bytes, over the 4000-byte limit by more than an event", f, len(b))
		}
		first := true
		err = record.Read(bytes.NewReader(b), func(e record.Event) error {
			if first {
				if e.Ev != record.EvHeader || e.Header.Part <= part {
					return fmt.Errorf("%s starts with %s part %v, want a header after part %d", f, e.Ev, e.Header, part)
				}
				part, first = e.Header.Part, false
				return nil
			}
			if next >= 0 && e.Seq != next {
				return fmt.Errorf("%s: seq %d, want %d", f, e.Seq, next)
			}
			next = e.Seq + 1
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Errorf("%s.3 exists: more than keep=2 rotated files", path)
	}
}

// TestLogRefuses: -log never follows a symbolic link, never truncates a
// file that is not a record, and truncates a record it finds.
func TestLogRefuses(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	os.WriteFile(target, []byte("keep me\n"), 0o600)
	link := filepath.Join(dir, "link.ndjson")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for path, want := range map[string]string{link: "symbolic link", target: "not a record", dir: "not a regular file"} {
		if l, err := state.CreateLog(path, 0, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CreateLog(%s): %v, want an error saying %q", path, err, want)
			if l != nil {
				l.Close()
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	old := filepath.Join(dir, "old.ndjson")
	os.WriteFile(old, []byte(`{"seq":0,"t":0,"ev":"header"}`+"\n"), 0o600)
	l, err := state.CreateLog(old, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if fi, _ := os.Stat(old); fi.Size() != 0 {
		t.Errorf("an old record was not truncated: %d bytes", fi.Size())
	}
}

// TestStatusFile: a status file written is read back whole, and one not
// updated for Stale is stale.
func TestStatusFile(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	st := state.Status{Log: filepath.Join(dir, "rec.ndjson"), Problems: []string{"p"}}
	st.ProxyPID, st.Updated, st.Start = os.Getpid(), now, now
	os.WriteFile(st.Log, nil, 0o600)
	path := filepath.Join(dir, "a.ndjson"+state.StatusSuffix)
	if err := state.WriteStatus(path, st); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "other.json"), nil, 0o600)
	ents, err := state.ReadStatuses(dir, now)
	if err != nil || len(ents) != 1 || ents[0].Err != nil || ents[0].Stale || ents[0].Status.ProxyPID != os.Getpid() || ents[0].Status.Log != st.Log || len(ents[0].Status.Problems) != 1 {
		t.Fatalf("ReadStatuses = %+v, %v", ents, err)
	}
	if e := state.ReadStatus(path, now.Add(state.Stale+time.Second)); !e.Stale {
		t.Errorf("a status not updated for %v is not stale", state.Stale+time.Second)
	}
	if e := state.ReadStatus(filepath.Join(dir, "none"), now); e.Err == nil {
		t.Error("a missing status file reads without error")
	}
}

// TestStatusGone (Unix): a status file is stale as soon as its proxy's
// process is gone, however recent its last update; a proxy that runs is
// never stale, however old its file (it is quiet); on Linux a pid the
// kernel gave to another process counts as gone.
func TestStatusGone(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no process check on Windows: a status file goes stale by its age")
	}
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, pid int, start uint64, updated time.Time) string {
		st := state.Status{ProcStart: start}
		st.ProxyPID, st.Start, st.Updated = pid, now.Add(-time.Minute), updated
		path := filepath.Join(dir, name+state.StatusSuffix)
		if err := state.WriteStatus(path, st); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A process that has ended and been reaped: its pid is free.
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	dead := child.Process.Pid
	self, selfStart := os.Getpid(), state.SelfStart()
	for _, c := range []struct {
		name  string
		path  string
		stale bool
		quiet bool
	}{
		{"killed a moment ago", write("killed", dead, 0, now), true, false},
		{"running, just updated", write("running", self, selfStart, now), false, false},
		{"running, not updated for a minute", write("quiet", self, selfStart, now.Add(-time.Minute)), selfStart == 0, selfStart != 0},
	} {
		e := state.ReadStatus(c.path, now)
		if e.Err != nil || e.Stale != c.stale || (e.Quiet > 0) != c.quiet {
			t.Errorf("%s: err %v, stale %v, quiet %v; want stale %v, quiet %v", c.name, e.Err, e.Stale, e.Quiet, c.stale, c.quiet)
		}
	}
	if selfStart != 0 {
		e := state.ReadStatus(write("reused", self, selfStart+1, now), now)
		if !e.Stale || !e.Gone {
			t.Errorf("a pid now another process's: stale %v, gone %v; want both", e.Stale, e.Gone)
		}
	}
}

// TestRemoveStale: status files of proxies that are gone are kept for
// KeepStale, then removed, with the temporary files killed proxies left;
// a running proxy's file is never removed.
func TestRemoveStale(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no process check on Windows")
	}
	dir := t.TempDir()
	now := time.Now()
	child := exec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	write := func(name string, pid int, start uint64, updated time.Time) string {
		st := state.Status{ProcStart: start}
		st.ProxyPID, st.Start, st.Updated = pid, updated, updated
		path := filepath.Join(dir, name+state.StatusSuffix)
		if err := state.WriteStatus(path, st); err != nil {
			t.Fatal(err)
		}
		return path
	}
	old := now.Add(-state.KeepStale - time.Hour)
	recent := write("recent", child.Process.Pid, 0, now.Add(-time.Hour))
	gone := write("gone", child.Process.Pid, 0, old)
	running := write("running", os.Getpid(), state.SelfStart(), old)
	tmp := filepath.Join(dir, ".gone"+state.StatusSuffix+".123")
	os.WriteFile(tmp, nil, 0o600)
	os.Chtimes(tmp, old, old)
	ents, err := state.ReadStatuses(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	removed := state.RemoveStale(dir, ents, now)
	slices.Sort(removed)
	if want := []string{tmp, gone}; !slices.Equal(removed, want) {
		t.Errorf("RemoveStale removed %q, want %q", removed, want)
	}
	for _, p := range []string{recent, running} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
}
