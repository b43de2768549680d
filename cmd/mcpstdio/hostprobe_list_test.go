package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestHostProbeListOnly: a host command that lists the tools and never
// calls one (an agent's "mcp list") is never sent huge-field's or
// many-blocks' payload, which only a tools/call's response carries: they
// are skipped, saying so, not passed on its exit status.
func TestHostProbeListOnly(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^(huge-field|many-blocks)$", "-huge-field", "200000", "-blocks", "200", "--", host, "-list", "{server}")
	want := map[string]assertions.Verdict{"huge-field": assertions.Skip, "many-blocks": assertions.Skip}
	if diff := cmp.Diff(want, verdicts(res.stdout)); diff != "" {
		t.Errorf("hostprobe of a host that only lists tools: verdicts (-want +got):\n%s\nstdout:\n%s\nstderr:\n%s", diff, res.stdout, res.stderr)
	}
}
