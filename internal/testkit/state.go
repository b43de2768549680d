package testkit

import (
	"os"
	"path/filepath"
	"runtime"
)

// stateRoot is the directory PrivateState made, removed by Exit.
var stateRoot string

// PrivateState gives this test binary, and every process it starts (a
// proxy, `mcpstdio status`), an mcpstdio state directory of its own under
// a new temporary directory, so that no test writes to, or cleans, the
// user's: it sets MCPSTDIO_STATE_DIR, the variable the per-user directory
// derives from (XDG_STATE_HOME; LocalAppData on Windows; on macOS it
// derives from HOME, which is left alone: the tests run on Linux) and
// TMPDIR (where the proxy's fallback directory is, and t.TempDir). Call it
// first in TestMain; Exit removes the directory.
func PrivateState() error {
	root, err := os.MkdirTemp("", "mcpstdio-test-state-")
	if err != nil {
		return err
	}
	stateRoot = root
	// TMPDIR is like /tmp: any user may make a directory in it (tests act
	// as a second user there), so root is open to be passed through.
	if err := os.Chmod(root, 0o711); err != nil {
		return err
	}
	for k, sub := range map[string]string{"MCPSTDIO_STATE_DIR": "mcpstdio", "XDG_STATE_HOME": "xdg-state", "TMPDIR": "tmp"} {
		d := filepath.Join(root, sub)
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if k == "TMPDIR" {
			if err := os.Chmod(d, 0o1777); err != nil {
				return err
			}
		}
		os.Setenv(k, d)
	}
	if runtime.GOOS == "windows" {
		os.Setenv("LocalAppData", filepath.Join(root, "xdg-state"))
	}
	return nil
}

// removeState removes what PrivateState made.
func removeState() {
	if stateRoot != "" {
		os.RemoveAll(stateRoot)
	}
}
