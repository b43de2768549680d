package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/record"
)

// lean is this command and full the mcpstdio command, built once by
// TestMain: the tests run the proxy both ways and compare.
var lean, full string

func TestMain(m *testing.M) {
	if err := testkit.PrivateState(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "mcpstdio-proxy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lean, err = cmdtest.Build(dir, ".", "mcpstdio-proxy")
	if err == nil {
		full, err = cmdtest.Build(dir, "../mcpstdio", "mcpstdio")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		testkit.Exit(code)
	}))
}

// proxies are the two commands that run the proxy: their names, and the
// argv before the proxy's flags.
func proxies() []struct {
	name string
	argv []string
} {
	return []struct {
		name string
		argv []string
	}{{"mcpstdio-proxy", []string{lean}}, {"mcpstdio proxy", []string{full, "proxy"}}}
}

// stateEnv makes the state and temporary directories the test's own.
func stateEnv(t *testing.T) []string {
	return []string{state.EnvStateDir + "=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
}

// run runs the proxy argv (from proxies) with args after it, env and
// stdin.
func run(t *testing.T, env, argv []string, stdin string, args ...string) cmdtest.Result {
	t.Helper()
	return cmdtest.Run(t, time.Minute, env, strings.NewReader(stdin), argv[0], append(argv[1:len(argv):len(argv)], args...)...)
}

// TestForwardsExactly: bytes that are no JSON-RPC at all (a NUL, invalid
// UTF-8, a 1 MiB line, no final newline) pass both ways exactly, the
// server's stderr too, and nothing of the proxy's own is written; the
// record counts every byte.
func TestForwardsExactly(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n\x00\xff\xfe not json\n" + strings.Repeat("x", 1<<20) + "\n{\"unterminated\":"
	const errText = "err \x00\xff\n"
	for _, p := range proxies() {
		log := filepath.Join(t.TempDir(), "rec.ndjson")
		res := run(t, stateEnv(t), p.argv, in, "-log", log, "--", "sh", "-c", `cat; printf 'err \000\377\n' >&2`)
		if res.Code != 0 || res.Stdout != in || res.Stderr != errText {
			t.Errorf("%s: exit %d, stdout %d bytes (equal: %v), stderr %q; want 0, the %d bytes sent, %q",
				p.name, res.Code, len(res.Stdout), res.Stdout == in, res.Stderr, len(in), errText)
		}
		var m *record.Metrics
		f, err := os.Open(log)
		if err != nil {
			t.Fatal(err)
		}
		err = record.Read(f, func(e record.Event) error {
			if e.Ev == record.EvSummary {
				m = e.Metrics
			}
			return nil
		})
		f.Close()
		if err != nil || m == nil {
			t.Fatalf("%s: record: %v, summary metrics %v", p.name, err, m)
		}
		if got := [3]int64{m.StdinBytes, m.StdoutBytes, m.StderrBytes}; got != [3]int64{int64(len(in)), int64(len(in)), int64(len(errText))} {
			t.Errorf("%s: record counts in, out, err %v bytes, want %d, %d, %d", p.name, got, len(in), len(in), len(errText))
		}
	}
}

// TestExitStatus: the server's exit status passes through (128+n for a
// signal n), 127 for a server that is not there, 2 for a usage error.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"-no-log", "--", "sh", "-c", "exit 3"}, 3},
		{[]string{"-no-log", "--", "sh", "-c", "kill -9 $$"}, 128 + 9},
		{[]string{"-no-log", "--", "sh", "-c", "cat >/dev/null"}, 0},
		{[]string{"-no-log", "--", "/no/such/server"}, 127},
		{[]string{"-chunk", "lots", "--", "cat"}, 2},
		{nil, 2},
	}
	for _, p := range proxies() {
		for _, tt := range tests {
			if res := run(t, stateEnv(t), p.argv, "", tt.args...); res.Code != tt.want {
				t.Errorf("%s %q: exit %d, want %d\nstderr:\n%s", p.name, tt.args, res.Code, tt.want, res.Stderr)
			}
		}
	}
}

// TestSameText: the help and the messages are mcpstdio proxy's, under
// this command's name.
func TestSameText(t *testing.T) {
	t.Parallel()
	env := stateEnv(t)
	for _, args := range [][]string{{"-h"}, {}, {"-chunk", "lots", "--", "cat"}, {"-fault", "out:nosuch", "--", "cat"}} {
		got := run(t, env, []string{lean}, "", args...)
		want := run(t, env, []string{full, "proxy"}, "", args...)
		want.Stderr = strings.ReplaceAll(want.Stderr, "mcpstdio proxy", "mcpstdio-proxy")
		if got != want || got.Stderr == "" {
			t.Errorf("mcpstdio-proxy %q: exit %d, stderr:\n%s\nwant mcpstdio proxy's, exit %d, named mcpstdio-proxy:\n%s", args, got.Code, got.Stderr, want.Code, want.Stderr)
		}
	}
}

// TestStatusFindsIt: `mcpstdio status` shows a running mcpstdio-proxy, as
// it shows mcpstdio proxy: the same status file in the same directory.
func TestStatusFindsIt(t *testing.T) {
	t.Parallel()
	env := stateEnv(t)
	r := cmdtest.Start(t, env, nil, lean, "--", full, "fake")
	if got, want := r.Call(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`), `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"; got != want {
		t.Errorf("response %q, want %q", got, want)
	}
	// The status file is rewritten every second and nothing announces
	// it: run the status command until it shows the proxy, bounded.
	var out cmdtest.Result
	poll.Wait(t, cmdtest.Bound(t), "mcpstdio status showing the mcpstdio-proxy", func() bool {
		out = cmdtest.Run(t, time.Minute, env, nil, full, "status")
		return strings.Contains(out.Stdout, fmt.Sprintf("proxy %d → server", r.Cmd.Process.Pid)) && strings.Contains(out.Stdout, full+" fake")
	}, func() string { return out.Stdout })
	r.Stdin.Close()
	if code := r.Wait(t); code != 0 {
		t.Errorf("exit %d, want the fake's 0\nstderr:\n%s", code, r.Stderr)
	}
}

// TestLinksLittle: the command links none of the packages that make the
// mcpstdio binary big (the network, testing, the probe's), and so, with
// no cgo, is statically linked: no dynamic loader or libc pages in the
// host's proxy.
func TestLinksLittle(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		thirdParty := strings.Contains(strings.SplitN(dep, "/", 2)[0], ".")
		switch {
		case dep == "net", strings.HasPrefix(dep, "net/"), strings.HasPrefix(dep, "crypto/tls"), dep == "testing", dep == "regexp",
			thirdParty && !strings.HasPrefix(dep, "github.com/mcpstdio/mcpstdio/") && !strings.HasPrefix(dep, "golang.org/x/sys/"):
			t.Errorf("mcpstdio-proxy links %s", dep)
		}
		for _, heavy := range []string{"assertions", "fakeserver", "mcptest", "replay", "cmd/internal/page", "internal/testkit", "cmd/internal/cmdtest"} {
			if dep == "github.com/mcpstdio/mcpstdio/"+heavy {
				t.Errorf("mcpstdio-proxy links %s", dep)
			}
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(lean)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			p.ReadAt(b, 0)
			t.Errorf("mcpstdio-proxy is dynamically linked (interpreter %s)", bytes.TrimRight(b, "\x00"))
		}
	}
}
