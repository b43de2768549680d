package mcptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoBuildPathError checks that a relative path that is no directory
// gets an error naming where GoBuild looked and, when the path exists from
// the module root, the import path to give instead.
func TestGoBuildPathError(t *testing.T) {
	// This package's directory is mcptest/; ./cmd/mcpstdio is the module
	// root's, as a newcomer would write it.
	err := checkDir("./cmd/mcpstdio")
	if err == nil {
		t.Fatal("checkDir(./cmd/mcpstdio) from mcptest/ = nil, want an error")
	}
	wd, _ := os.Getwd()
	for _, want := range []string{filepath.Join(wd, "cmd", "mcpstdio"), "from the test's package directory", `"github.com/mcpstdio/mcpstdio/cmd/mcpstdio"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkDir(./cmd/mcpstdio) = %q, want it to contain %q", err, want)
		}
	}
	if err := checkDir("./no/such/server"); err == nil || !strings.Contains(err.Error(), "give the main package's import path") {
		t.Errorf("checkDir(./no/such/server) = %v, want the advice to give an import path", err)
	}
	if err := checkDir("./testdata/echoserver"); err != nil {
		t.Errorf("checkDir(./testdata/echoserver) = %v, want nil", err)
	}
	if err := checkDir("github.com/mcpstdio/mcpstdio/cmd/mcpstdio"); err != nil {
		t.Errorf("checkDir of an import path = %v, want nil", err)
	}
}
