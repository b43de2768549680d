package mcpstdio_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var goInstall = regexp.MustCompile(`go install github\.com/mcpstdio/mcpstdio/([\w./-]+)@`)

// TestInstallCommands checks the install commands of the Markdown: every
// "go install github.com/mcpstdio/mcpstdio/PATH@VERSION" names a main
// package of this repository, and the npx command of the README and of the
// npm package's is the one of docs/install.md, which the integration tests run from the npm packages
// (TestNPMPackages).
func TestInstallCommands(t *testing.T) {
	n := 0
	for _, md := range markdownFiles(t) {
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goInstall.FindAllStringSubmatch(string(b), -1) {
			n++
			mains, _ := filepath.Glob(filepath.Join(filepath.FromSlash(m[1]), "*.go"))
			found := false
			for _, f := range mains {
				src, _ := os.ReadFile(f)
				found = found || (!strings.HasSuffix(f, "_test.go") && regexp.MustCompile(`(?m)^package main$`).Match(src))
			}
			if !found {
				t.Errorf("%s: %q installs %s, which is not a main package of this repository", md, m[0], m[1])
			}
		}
	}
	if n == 0 {
		t.Error("no go install command in the Markdown")
	}
	npx := func(file string) string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "npx mcpstdio ") {
				return line
			}
		}
		t.Fatalf("%s has no line beginning npx mcpstdio", file)
		return ""
	}
	d := npx(filepath.Join("docs", "install.md"))
	for _, f := range []string{"README.md", filepath.Join("npm", "mcpstdio", "README.md")} {
		if r := npx(f); r != d {
			t.Errorf("%s's npx command %q is not docs/install.md's %q, which the integration tests run", f, r, d)
		}
	}
}
