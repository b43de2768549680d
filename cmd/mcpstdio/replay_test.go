package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// sample is replay's pinned record: a session with the fake (a stall, a
// cancel, a flood of progress notifications).
var sample = filepath.Join("..", "..", "replay", "testdata", "session.ndjson")

// TestReplayScenarios: each field hang's record (replay/testdata), replayed
// from the shell by the rules, exits 1 on the server that hung (fake
// -naive), its first line naming the rule, and 0 on the fixed one (fake).
func TestReplayScenarios(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct{ name, rule string }{
		{"host-stall", "reads-while-blocked"},
		{"fault-stall", "reads-while-blocked"},
		{"cancel-slow", "cancel"},
	} {
		file := filepath.Join("..", "..", "replay", "testdata", sc.name+".ndjson")
		t.Run(sc.name+"/naive", func(t *testing.T) {
			t.Parallel()
			res := mcpstdio(t, time.Minute, "replay", "-redact", "result.content.*.text", "-record", file, "--", binary, "fake", "-naive")
			if res.code != 1 || !strings.HasPrefix(res.stdout, "replay: FAIL "+sc.rule+" at seq ") {
				t.Errorf("the server that hung: exit %d, want 1 and %s failed in the first line\nstdout:\n%s\nstderr:\n%s", res.code, sc.rule, res.stdout, res.stderr)
			}
		})
		t.Run(sc.name+"/fixed", func(t *testing.T) {
			t.Parallel()
			res := mcpstdio(t, time.Minute, "replay", "-redact", "result.content.*.text", "-record", file, "--", binary, "fake")
			if res.code != 0 || !strings.HasPrefix(res.stdout, "replay: PASS by the rules") {
				t.Errorf("the fixed server: exit %d, want 0 and a pass\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
			}
		})
	}
}

// TestReplayCommand: the host side from the shell with -same, against the
// server the record was made with (exit 0) and against a changed one (exit
// 1, the departure printed).
func TestReplayCommand(t *testing.T) {
	res := mcpstdio(t, time.Minute, "replay", "-same", "-record", sample, "--", binary, "fake")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "replay: as recorded: 24 messages checked") {
		t.Errorf("replay against the same fake: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	res = mcpstdio(t, time.Minute, "replay", "-same", "-patience", "500ms", "-record", sample, "--", binary, "fake", "-tools", "big,slow")
	if res.code != 1 || !strings.Contains(res.stdout, "different: seq 30 (out) tools/call") || !strings.Contains(res.stdout, "unknown tool \"echo\"") {
		t.Errorf("replay against a fake without echo: exit %d, want 1 and the different response\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	// A server that does not start: the report says the replay stopped,
	// never "as recorded".
	res = mcpstdio(t, time.Minute, "replay", "-record", sample, "--", filepath.Join(t.TempDir(), "no-such-server"))
	if res.code != 1 || !strings.HasPrefix(res.stdout, "replay: stopped before the end of the record") || strings.Contains(res.stdout, "as recorded") {
		t.Errorf("replay against a server that does not start: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
}

// TestReplayServe: the server side from the shell, as a host's server
// command; the host side played against it finds nothing to report.
func TestReplayServe(t *testing.T) {
	rec, err := replay.Load(sample)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rep, err := replay.Host(ctx, mcptest.Command(binary, "replay", "-serve", "-record", sample), rec, replay.Same())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Departures) > 0 || rep.Checked != len(rec.Server) {
		t.Errorf("the record's host side against its server side served by the command: %s", rep)
	}
}

// TestReplaySave: -save writes the record redacted, private, and it
// replays with the same -redact.
func TestReplaySave(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "redacted.ndjson")
	res := mcpstdio(t, time.Minute, "replay", "-redact", "params.arguments.text", "-redact", "result.content.*.text", "-record", sample, "-save", out)
	if res.code != 0 || res.stdout != "" || res.stderr != "" {
		t.Fatalf("replay -save: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"text\":\"after\"`)) || !bytes.Contains(b, []byte(`sha256:`)) {
		t.Errorf("the saved record still holds the echo's text, or no hash")
	}
	if fi, err := os.Stat(out); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the saved record's mode is %v, want 0600", fi.Mode().Perm())
	}
	res = mcpstdio(t, time.Minute, "replay", "-redact", "params.arguments.text", "-redact", "result.content.*.text", "-record", out, "--", binary, "fake")
	if res.code != 0 {
		t.Errorf("the redacted record against the fake: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
}

// TestReplayUsage: usage errors exit 2 with one line naming the problem.
func TestReplayUsage(t *testing.T) {
	notRecord := filepath.Join(t.TempDir(), "not.ndjson")
	if err := os.WriteFile(notRecord, []byte("{\"hello\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--", "x"}, "no -record FILE"},
		{[]string{"replay", "-record", sample}, "want a server command after --, -serve or -save"},
		{[]string{"replay", "-record", sample, "--"}, `no server command after "--"`},
		{[]string{"replay", "-serve", "-record", sample, "--", "x"}, "no server command"},
		{[]string{"replay", "-record", sample, "-timed", "-1", "--", "x"}, "must not be negative"},
		{[]string{"replay", "-record", sample, "-idle-cap", "1s", "--", "x"}, "-idle-cap needs -timed"},
		{[]string{"replay", "-record", sample, "-redact", "a..b", "--", "x"}, `path "a..b"`},
		{[]string{"replay", "-record", filepath.Join(t.TempDir(), "missing"), "--", "x"}, "-record"},
		{[]string{"replay", "-record", notRecord, "--", "x"}, "-record"},
		{[]string{"replay", "-nope"}, "-nope"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, &stdout, &stderr)
		line := strings.TrimSuffix(stderr.String(), "\n")
		if code != 2 || stdout.Len() != 0 || strings.Contains(line, "\n") || !strings.Contains(line, tt.want) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 2, no stdout, one line naming %q", tt.args, code, stdout.String(), stderr.String(), tt.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"help", "replay"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "-serve") {
		t.Errorf("help replay: %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestReplayStrict: a record with a message it has only the head of
// (record's pinned sample, made without -log-bodies) replays with exit 0,
// the headline naming what was not checked; with -strict, exit 1. The
// fake writes less than the recorded server did by the host's last
// action, which waits up to three patiences for it: -patience 500ms.
func TestReplayStrict(t *testing.T) {
	t.Parallel()
	recSample := filepath.Join("..", "..", "record", "testdata", "sample.ndjson")
	res := mcpstdio(t, time.Minute, "replay", "-same", "-patience", "500ms", "-record", recSample, "--", binary, "fake", "-ignore-cancel")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "replay: as recorded for what could be checked:") || !strings.Contains(strings.SplitN(res.stdout, "\n", 2)[0], "1 messages only as heads") {
		t.Errorf("replay without -strict: exit %d, want 0 and a headline naming the unchecked message\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	res = mcpstdio(t, time.Minute, "replay", "-same", "-strict", "-patience", "500ms", "-record", recSample, "--", binary, "fake", "-ignore-cancel")
	if res.code != 1 {
		t.Errorf("replay -strict of a record with an unchecked message: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
}
