package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRedactArgv: the values of secret-looking flags (--name=V, --name V,
// -name V) and KEY=value words are redacted and counted; argv[0], other
// flags and words, and a flag followed by another flag are kept.
func TestRedactArgv(t *testing.T) {
	t.Parallel()
	pol, err := newRedactPolicy(DefaultRedactKeys, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := []string{"/opt/token-server", "--stdio", "--token=t0k", "--password", "hunter2", "API_KEY=sk-1", "--api-key=sk-2",
		"-secret", "s3", "--verbose", "--auth", "--port", "8080", "Authorization=Bearer x", "name=value", "--token", "", "positional"}
	want := []string{"/opt/token-server", "--stdio", "--token=[redacted]", "--password", "[redacted]", "API_KEY=[redacted]", "--api-key=[redacted]",
		"-secret", "[redacted]", "--verbose", "--auth", "--port", "8080", "Authorization=[redacted]", "name=value", "--token", "", "positional"}
	orig := slices.Clone(in)
	got, n := pol.redactArgv(in)
	if diff := cmp.Diff(want, got); diff != "" || n != 6 {
		t.Errorf("redactArgv: %d redacted, want 6 (-want +got):\n%s", n, diff)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("redactArgv changed its argument: %q", in)
	}
	none, _ := newRedactPolicy(nil, nil)
	if got, n := none.redactArgv(in); n != 0 || !slices.Equal(got, in) {
		t.Errorf("with no key words: %q, %d redacted; want argv as it is", got, n)
	}
}

// TestRedactArgvConfigForms: the forms MCP configurations use most for
// secrets in a server's arguments are redacted: header arguments (as
// mcp-remote takes them), a URL's userinfo password, --env=KEY=V, a JSON
// argument, --bearer and a bare "Bearer" token; what only looks like them
// is kept.
func TestRedactArgvConfigForms(t *testing.T) {
	t.Parallel()
	pol, err := newRedactPolicy(DefaultRedactKeys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in, want []string
		n        int
	}{
		{[]string{"--header", "Authorization: Bearer V1"}, []string{"--header", "Authorization: [redacted]"}, 1},
		{[]string{"--header", "Authorization:Bearer V1"}, []string{"--header", "Authorization:[redacted]"}, 1},
		{[]string{"--header", "X-Api-Key: V1"}, []string{"--header", "X-Api-Key: [redacted]"}, 1},
		{[]string{"--header=Authorization: Bearer V1"}, []string{"--header=Authorization: [redacted]"}, 1},
		{[]string{"postgresql://admin:V1@db/app"}, []string{"postgresql://admin:[redacted]@db/app"}, 1},
		{[]string{"--db=https://u:V1@h:5432/x?y=1"}, []string{"--db=https://u:[redacted]@h:5432/x?y=1"}, 1},
		{[]string{"--env=API_KEY=V1", "-e", "GITHUB_TOKEN=V2"}, []string{"--env=API_KEY=[redacted]", "-e", "GITHUB_TOKEN=[redacted]"}, 2},
		// A variable set for what the server starts, whatever its name.
		{[]string{"--env=KEY=V1", "--env", "KEY=V2"}, []string{"--env=KEY=[redacted]", "--env", "KEY=[redacted]"}, 2},
		{[]string{"--env=DB_PASS=V1", "-e", "DB_PASS=V2", "-env", "X=V1", "--env-var=STRIPE_SK=V2"},
			[]string{"--env=DB_PASS=[redacted]", "-e", "DB_PASS=[redacted]", "-env", "X=[redacted]", "--env-var=STRIPE_SK=[redacted]"}, 4},
		{[]string{"--env=DATABASE_URL=postgres://u:V1@h/d"}, []string{"--env=DATABASE_URL=[redacted]"}, 1},
		{[]string{`{"apiKey":"V1","region":"eu"}`}, []string{`{"apiKey":"[redacted]","region":"eu"}`}, 1},
		{[]string{`--config={"nested":{"password":"V1"}}`}, []string{`--config={"nested":{"password":"[redacted]"}}`}, 1},
		{[]string{"--bearer", "V1"}, []string{"--bearer", "[redacted]"}, 1},
		{[]string{"Bearer V1"}, []string{"Bearer [redacted]"}, 1},
		// Kept: no secret in them.
		{[]string{"--header", "Accept: text/plain", "http://localhost:8080/mcp", "https://user@host/x", `{"region":"eu"}`, "--port=8080", "a:b"},
			[]string{"--header", "Accept: text/plain", "http://localhost:8080/mcp", "https://user@host/x", `{"region":"eu"}`, "--port=8080", "a:b"}, 0},
		// Kept: -e's word is code, not a variable ("node -e").
		{[]string{"-e", "console.log(a=1)", "--env"}, []string{"-e", "console.log(a=1)", "--env"}, 0},
	} {
		in := append([]string{"server"}, c.in...)
		got, n := pol.redactArgv(in)
		if diff := cmp.Diff(append([]string{"server"}, c.want...), got); diff != "" || n != c.n {
			t.Errorf("redactArgv(%q): %d redacted, want %d (-want +got):\n%s", c.in, n, c.n, diff)
		}
		for _, w := range got {
			if strings.Contains(w, "V1") || strings.Contains(w, "V2") {
				t.Errorf("redactArgv(%q) kept a secret: %q", c.in, got)
			}
		}
	}
}
