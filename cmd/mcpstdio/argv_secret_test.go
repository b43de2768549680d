package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// TestArgvSecretsRedacted: secrets in the server's argv (--token=V,
// --password V, API_KEY=V, --api-key=V, and the forms MCP configurations
// use: a header argument, a URL's password, --env=KEY=V, a JSON argument,
// --bearer V) are in none of the record, the status file, `status`, the
// live page's status.json, and show in any form; the marker is there
// instead, and the record's header counts them.
func TestArgvSecretsRedacted(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	secrets := []string{"tok-5e1f", "pw-77a0", "sk-ab12", "sk-cd34", "hd-9a1b", "xk-4c2d", "pg-6e3f", "en-8a5b", "js-1c7d", "br-3e9f"}
	dir := t.TempDir()
	log := filepath.Join(dir, "rec.ndjson")
	r := startProxy(t, nil, "proxy", "-dir", dir, "-log", log, "--", "sh", "-c", "exec cat", "sh",
		"--token="+secrets[0], "--password", secrets[1], "API_KEY="+secrets[2], "--api-key="+secrets[3],
		"--header", "Authorization: Bearer "+secrets[4], "--header", "X-Api-Key:"+secrets[5], "postgresql://admin:"+secrets[6]+"@db/app",
		"--env=GITHUB_TOKEN="+secrets[7], `{"apiKey":"`+secrets[8]+`"}`, "--bearer", secrets[9])
	r.call(t, ping)
	check := func(where, s string) {
		t.Helper()
		for _, v := range secrets {
			if strings.Contains(s, v) {
				t.Errorf("%s shows %q", where, v)
			}
		}
		if !strings.Contains(s, "[redacted]") {
			t.Errorf("%s has no [redacted] marker: %.300q", where, s)
		}
	}
	var files []string
	poll.Wait(t, cmdtest.Bound(t), "a status file", func() bool {
		files, _ = filepath.Glob(filepath.Join(dir, "*"+state.StatusSuffix))
		return len(files) > 0
	}, func() string { return "" })
	b, _ := os.ReadFile(files[0])
	check("the status file", string(b))
	st := mcpstdio(t, time.Minute, "status", "-dir", dir)
	check("status", st.stdout)
	url := livePage(t, dir)
	base, token, _ := strings.Cut(url, "?token=")
	var body string
	poll.Wait(t, cmdtest.Bound(t), "status.json listing the proxy", func() bool {
		_, body = fetch(t, base+"status.json?token="+token)
		return strings.Contains(body, "exec cat")
	}, func() string { return body })
	check("the live page's status.json", body)
	r.stdin.Close()
	r.wait(t)
	raw, _ := os.ReadFile(log)
	check("the record", string(raw))
	evs := readRecord(t, log)
	if h := evs[0].Header; h == nil || h.ArgvRedacted != len(secrets) {
		t.Errorf("the record's header: %+v, want argv_redacted %d", h, len(secrets))
	}
	for _, args := range [][]string{{"show", log}, {"show", "-json", log}, {"show", "-html", "-", log}} {
		res := mcpstdio(t, time.Minute, args...)
		check(strings.Join(args[:len(args)-1], " "), res.stdout+res.stderr)
	}
}
