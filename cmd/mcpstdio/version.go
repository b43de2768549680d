package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/mcpstdio/mcpstdio/cmd/internal/version"
)

const versionUsage = `usage: mcpstdio version

Prints this build's version, the commit it was built from, the Go toolchain
and the platform on one line, as in

  mcpstdio v0.1.0 (commit ef874b0a36e90888bbc16b947c5bc2a3a0e7140b) go1.24.4 linux/amd64

The version is the release for the npm packages and "go install
github.com/mcpstdio/mcpstdio/cmd/mcpstdio@VERSION", a pseudo-version
for "go build" in a clone, and (devel) where the toolchain recorded none
("go run", a git worktree, -buildvcs=false); the commit is left out when
nothing recorded it (a build from the module proxy). Exit status: 0; 2
usage error.
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpstdio version", flag.ContinueOnError)
	if ok, code := parseFlags(fs, noFlags{}, args, versionUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	fmt.Fprintln(stdout, "mcpstdio "+version.Get().String())
	return 0
}

// noFlags is the flags of a command that takes none.
type noFlags struct{}

func (noFlags) register(*flag.FlagSet) {}
