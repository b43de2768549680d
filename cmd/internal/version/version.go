// Package version says which build of the commands is running: the release
// it was stamped as, or what the Go toolchain recorded of the module and the
// commit it was built from.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// The release builds (the npm packages' build script, npm/build.sh) stamp
// the version and the commit with
//
//	-ldflags "-X github.com/mcpstdio/mcpstdio/cmd/internal/version.stamp=v0.1.0
//	          -X github.com/mcpstdio/mcpstdio/cmd/internal/version.commit=<sha>
//	          -X github.com/mcpstdio/mcpstdio/cmd/internal/version.modified=true"
//
// since the toolchain records no commit for a build in a git worktree, with
// -buildvcs=false, or from a source archive. Other builds leave them empty.
var stamp, commit, modified string

// Info is what a build knows of itself.
type Info struct {
	// Version is the stamped release (v0.1.0); else the module's version as
	// the toolchain recorded it: a release for "go install ...@v0.1.0", a
	// pseudo-version (v0.0.0-20261204191846-ef874b0a36e9+dirty) for "go
	// build" in a clone, "(devel)" for "go run", a git worktree or
	// -buildvcs=false.
	Version string
	// Commit is the VCS revision the build was made from ("" when neither
	// the stamp nor the toolchain recorded one), Time its commit time
	// (RFC 3339, "" if unknown), Modified whether the tree had changes.
	Commit, Time string
	Modified     bool
	// Go is the toolchain's version, OS and Arch what the build is for.
	Go, OS, Arch string
}

// Get returns this build's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi, stamp, commit, modified == "true")
}

// from makes the Info of a build from its build info (nil: none) and the
// stamps; a stamp wins over what the toolchain recorded.
func from(bi *debug.BuildInfo, stamp, commit string, modified bool) Info {
	i := Info{Version: "(devel)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			i.Version = v
		}
		if bi.GoVersion != "" {
			i.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			case "GOOS":
				i.OS = s.Value
			case "GOARCH":
				i.Arch = s.Value
			}
		}
	}
	if stamp != "" {
		i.Version = stamp
	}
	if commit != "" {
		i.Commit, i.Time, i.Modified = commit, "", modified
	}
	return i
}

// String is the line "mcpstdio version" prints: the version, the commit
// (and its time, and "modified" for a tree with changes) when known, the
// toolchain and the platform, as in
//
//	v0.1.0 (commit ef874b0a36e90888bbc16b947c5bc2a3a0e7140b) go1.24.4 linux/amd64
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Commit != "" {
		fmt.Fprintf(&b, " (commit %s", i.Commit)
		if i.Time != "" {
			fmt.Fprintf(&b, ", %s", i.Time)
		}
		if i.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s/%s", i.Go, i.OS, i.Arch)
	return b.String()
}
