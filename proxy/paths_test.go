package proxy_test

import (
	"runtime"
	"testing"

	"github.com/mcpstdio/mcpstdio/proxy"
)

// forwardingPaths are the two ways a proxy forwards (see splice_linux.go):
// the tests of byte fidelity and back-pressure run on each.
var forwardingPaths = []string{"copy", "splice"}

// onEachPath runs test once per forwarding path, with every proxy it
// starts forced onto that path; check, if set, gets the proxy after the
// test and the path, to say that the path was taken.
func onEachPath(t *testing.T, test func(t *testing.T, path string)) {
	onPaths(t, forwardingPaths, test)
}

// onPaths is onEachPath for the paths given ("auto" is the rule).
func onPaths(t *testing.T, paths []string, test func(t *testing.T, path string)) {
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			if path == "splice" && runtime.GOOS != "linux" {
				t.Skip("splice(2) is Linux's: " + runtime.GOOS + " has only the copying path")
			}
			defer proxy.SetForwarding(path)()
			test(t, path)
		})
	}
}

// wantPath checks that direction d of p went by path: on "splice" all of
// want bytes were spliced (forced, every chunk is), on "copy" none (the
// rule, "auto", may do either).
func wantPath(t *testing.T, p *proxy.Proxy, path string, d int, want int64) {
	t.Helper()
	got := p.Spliced(d)
	switch {
	case path == "splice" && got != want:
		t.Errorf("forced onto splice, direction %d spliced %d bytes, want all %d", d, got, want)
	case path == "copy" && got != 0:
		t.Errorf("forced onto copying, direction %d spliced %d bytes, want 0", d, got)
	}
}
