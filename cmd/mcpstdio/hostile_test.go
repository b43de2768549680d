package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// evil is what a hostile peer puts in its strings: a title, a clear
// screen, a cursor up, a carriage return and newline before a forged
// verdict, a C1 CSI and a bidi override.
const evil = "\x1b]0;owned\a\x1b[2J\x1b[1A\r  PASS  forged\u009b2J\u202e\n  PASS  stdout-clean"

var hostileRecord = filepath.Join("..", "internal", "page", "testdata", "hostile.ndjson")

// rawControl returns the first raw control character in out: a byte
// below 0x20 other than newline and tab, DEL, or a C1 control as a rune
// (or as a lone byte); "" if none.
func rawControl(out string) string {
	for i, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\ufffd' && out[i] != 0xef {
			return out[max(i-40, 0):min(i+40, len(out))]
		}
	}
	return ""
}

// forged returns a line of out that begins as a verdict line does but was
// not one of the lines the command printed as verdicts (those name a
// criterion that the run had).
func forged(out string) string {
	for _, l := range strings.Split(out, "\n") {
		// At any indentation: probe -v indents a result's details, and a
		// server's message with a newline put its forged line there.
		if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, "PASS  forged") || strings.HasPrefix(t, "PASS  stdout-clean tools/call") {
			return l
		}
	}
	return ""
}

// hostileServer is testdata/hostileserver built once.
var hostileServer struct {
	once sync.Once
	path string
	err  error
}

func buildHostileServer(t *testing.T) string {
	t.Helper()
	hostileServer.once.Do(func() {
		hostileServer.path = filepath.Join(filepath.Dir(binary), "hostileserver")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", hostileServer.path, "./testdata/hostileserver").CombinedOutput(); err != nil {
			hostileServer.err = err
			t.Logf("%s", out)
		}
	})
	if hostileServer.err != nil {
		t.Fatalf("building testdata/hostileserver: %v", hostileServer.err)
	}
	return hostileServer.path
}

// TestHostileTerminal: what show, status, probe and hostprobe print for a
// record, a status file, a server and a host with escape sequences,
// carriage returns, newlines before forged verdicts, C1 controls and bidi
// overrides in every string holds no raw control character (but newlines
// and tabs), and no line a peer forged.
func TestHostileTerminal(t *testing.T) {
	t.Parallel()
	check := func(what string, r result) {
		t.Helper()
		for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			if c := rawControl(out); c != "" {
				t.Errorf("%s: its %s holds a raw control character: %q", what, name, c)
			}
			if l := forged(out); l != "" {
				t.Errorf("%s: its %s holds a forged line %q", what, name, l)
			}
		}
	}
	show := mcpstdio(t, time.Minute, "show", hostileRecord)
	if !strings.Contains(show.stdout, `\x1b]0;forged title\x07`) {
		t.Errorf("show: the payloads are not shown escaped:\n%s%s", show.stdout, show.stderr)
	}
	check("show", show)

	dir := t.TempDir()
	now := time.Now()
	evilID, _ := json.Marshal(evil)
	st := state.Status{Status: proxy.Status{ProxyPID: 1, ServerPID: 2, Argv: []string{evil}, Start: now.Add(-time.Minute), Updated: now, Running: true,
		Exit:     &proxy.ExitInfo{Text: evil},
		Streams:  []proxy.StreamStatus{{Dir: evil, Current: &proxy.CurrentFrame{ID: evilID, Bytes: 3}}},
		Pending:  []proxy.PendingStatus{{Dir: record.DirIn, ID: evilID, Method: evil, Tool: evil, State: evil}},
		Verdicts: []record.Verdict{{Kind: evil, Text: evil}}}, Log: evil, Problems: []string{evil}}
	path := filepath.Join(dir, "1"+state.StatusSuffix)
	if err := state.WriteStatus(path, st); err != nil {
		t.Fatal(err)
	}
	status := mcpstdio(t, time.Minute, "status", path)
	if !strings.Contains(status.stdout, `verdict \x1b]0;owned\x07`) {
		t.Errorf("status: the verdict is not shown escaped:\n%s%s", status.stdout, status.stderr)
	}
	check("status", status)

	server := buildHostileServer(t)
	// The hostile server behind the real proxy: what it sends (names,
	// errors, stderr) and what the host sends (an unknown cancel with an
	// evil reason, an evil method) is recorded as it is, and shown escaped.
	rec := filepath.Join(dir, "proxied.ndjson")
	evilJSON, _ := json.Marshal(evil)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":` + string(evilJSON) + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(evilJSON) + `,"reason":` + string(evilJSON) + `}}`,
		`{"jsonrpc":"2.0","id":` + string(evilJSON) + `,"method":` + string(evilJSON) + `}`,
	}, "\n") + "\n"
	proxied := resultOf(cmdtest.Run(t, time.Minute, nil, strings.NewReader(in), binary, "proxy", "-dir", dir, "-log", rec, "--", server))
	if proxied.code != 0 {
		t.Fatalf("the proxy in front of the hostile server: exit %d\n%s", proxied.code, proxied.stderr)
	}
	shown := mcpstdio(t, time.Minute, "show", rec)
	if !strings.Contains(shown.stdout, `\x1b]0;owned\x07`) {
		t.Errorf("show of the proxied session: the server's strings are not shown escaped:\n%s%s", shown.stdout, shown.stderr)
	}
	check("show of the proxied session", shown)

	probe := mcpstdio(t, 2*time.Minute, "probe", "-v", "-run", "^(stdout-clean|result-bounded)$", "-bounded", `z {}`, "--", server)
	if !strings.Contains(probe.stdout, `FAIL  result-bounded`) || !strings.Contains(probe.stdout, `\x1b]0;owned\x07`) {
		t.Errorf("probe: want result-bounded failed with the server's error shown escaped:\n%s%s", probe.stdout, probe.stderr)
	}
	check("probe", probe)

	if runtime.GOOS == "windows" {
		return
	}
	host := mcpstdio(t, time.Minute, "hostprobe", "-start-timeout", "10s", "-within", "5s", "--", "sh", "-c", `printf '\033]0;owned\a\033[2J\r  PASS  forged\n'; printf '\033[1Aerr\n' >&2; exit 1`)
	if !strings.Contains(host.stderr, `\x1b[1Aerr`) {
		t.Errorf("hostprobe: want the host's last line shown escaped:\n%s%s", host.stdout, host.stderr)
	}
	check("hostprobe", host)
}
