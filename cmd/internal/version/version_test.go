package version

import (
	"runtime/debug"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestFrom(t *testing.T) {
	vcs := func(rev, time, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: time}, {Key: "vcs.modified", Value: modified}}
	}
	build := func(version string, settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.24.4", Main: debug.Module{Path: "github.com/mcpstdio/mcpstdio", Version: version}, Settings: settings}
	}
	const rev = "ef874b0a36e90888bbc16b947c5bc2a3a0e7140b"
	for _, tc := range []struct {
		name          string
		bi            *debug.BuildInfo
		stamp, commit string
		modified      bool
		want          string
	}{
		{"go install of a release", build("v0.1.0", nil), "", "", false, "v0.1.0 go1.24.4 "},
		{"go build in a clone", build("v0.0.0-20261204191846-ef874b0a36e9+dirty", vcs(rev, "2026-12-04T19:18:46Z", "true")), "", "", false,
			"v0.0.0-20261204191846-ef874b0a36e9+dirty (commit " + rev + ", 2026-12-04T19:18:46Z, modified) go1.24.4 linux/arm64"},
		{"go run", build("(devel)", nil), "", "", false, "(devel) go1.24.4 "},
		{"no build info", nil, "", "", false, "(devel) "},
		{"npm release build", build("(devel)", nil), "v0.1.0", rev, false, "v0.1.0 (commit " + rev + ") go1.24.4 "},
		{"npm build of a changed tree", build("(devel)", vcs("0000", "2026-01-01T00:00:00Z", "false")), "v0.1.0", rev, true,
			"v0.1.0 (commit " + rev + ", modified) go1.24.4 linux/arm64"},
		{"stamped version, the toolchain's commit", build("(devel)", vcs(rev, "2026-12-04T19:18:46Z", "false")), "v0.1.0", "", false,
			"v0.1.0 (commit " + rev + ", 2026-12-04T19:18:46Z) go1.24.4 linux/arm64"},
	} {
		got := from(tc.bi, tc.stamp, tc.commit, tc.modified).String()
		// Without GOOS and GOARCH in the settings the platform is this
		// one's: compare up to it.
		if len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("%s: String() = %q, want it to begin %q", tc.name, got, tc.want)
		}
	}
}
