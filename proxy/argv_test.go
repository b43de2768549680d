package proxy

import (
	"slices"
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
