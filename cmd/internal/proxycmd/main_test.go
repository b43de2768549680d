package proxycmd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) {
	if err := testkit.PrivateState(); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit))
}

// TestName: the help and every message give the command's name, never
// "mcpstdio proxy".
func TestName(t *testing.T) {
	t.Setenv(state.EnvStateDir, t.TempDir())
	for _, args := range [][]string{{"-h"}, {}, {"-chunk", "lots", "--", "x"}, {"-redact", "a..b", "--", "x"}, {"-v", "-no-log", "--", "/no/such/server"}} {
		var stdout, stderr bytes.Buffer
		code := proxycmd.Run(context.Background(), "NAME", args, strings.NewReader(""), &stdout, &stderr)
		text := stderr.String()
		if stdout.Len() != 0 || !strings.Contains(text, "NAME") || strings.Contains(text, "mcpstdio proxy") {
			t.Errorf("Run(%q) = %d, stdout %q, stderr:\n%s\nwant nothing on stdout and only NAME named", args, code, stdout.String(), stderr.String())
		}
	}
}
