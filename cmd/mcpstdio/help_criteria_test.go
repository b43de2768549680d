package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestHelpListsCriteria: probe -h and hostprobe -h name every criterion
// their battery runs, in order.
func TestHelpListsCriteria(t *testing.T) {
	for cmd, names := range map[string][]string{"probe": assertions.ServerCriterionNames(), "hostprobe": assertions.HostCriterionNames()} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), []string{cmd, "-h"}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s -h: exit %d: %s", cmd, code, stderr.String())
		}
		if want := strings.Join(names, ", "); !strings.Contains(stdout.String(), want) {
			t.Errorf("%s -h does not list its criteria (%s):\n%s", cmd, want, stdout.String())
		}
	}
}
