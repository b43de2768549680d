package state

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// EnvStateDir is the environment variable that, when set, names the
// directory DefaultDir returns.
const EnvStateDir = "MCPSTDIO_STATE_DIR"

// DefaultDir returns the per-user directory where the proxy keeps records
// and status files unless told otherwise; never the working directory:
//
//   - $MCPSTDIO_STATE_DIR, if set;
//   - Linux and other Unix: $XDG_STATE_HOME/mcpstdio, else ~/.local/state/mcpstdio;
//   - macOS: ~/Library/Logs/mcpstdio;
//   - Windows: %LocalAppData%\mcpstdio.
//
// It does not create the directory.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvStateDir); d != "" {
		return d, nil
	}
	return userDir()
}

// userDir is DefaultDir without $MCPSTDIO_STATE_DIR.
func userDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		d, err := os.UserCacheDir() // %LocalAppData%
		if err != nil {
			return "", fmt.Errorf("state: no per-user directory: %w", err)
		}
		return filepath.Join(d, "mcpstdio"), nil
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("state: no per-user directory: %w", err)
		}
		return filepath.Join(home, "Library", "Logs", "mcpstdio"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpstdio"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state: no per-user directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "mcpstdio"), nil
}

// SearchDirs returns the directories where `mcpstdio status` looks for
// status files when it is not told where: $MCPSTDIO_STATE_DIR if set, the
// per-user directory (DefaultDir without the variable) and FallbackDir,
// each once, in that order. A host may start its servers without the
// variable (Codex passes a server only the environment its configuration
// names), so that a proxy keeps its files in the per-user directory while
// the shell that runs status has the variable set: status reads both.
func SearchDirs() []string {
	var dirs []string
	if d := os.Getenv(EnvStateDir); d != "" {
		dirs = append(dirs, d)
	}
	if d, err := userDir(); err == nil {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, FallbackDir())
	out := dirs[:0]
	for _, d := range dirs {
		if !slices.Contains(out, filepath.Clean(d)) {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}

// PrivateDir makes dir (and its parents) if needed, 0700 (on Unix), so
// that records of other users' sessions are not readable by anyone else;
// the files kept there are made 0600. A directory that already exists is
// never changed: one that its group or others may write to is refused
// (what is in it may be another user's plant, and status would refuse
// it), whatever else is taken as it is. A dir (or a symbolic link to it)
// that another user owns is refused with an error naming the owner: they
// could read or replace what is kept there. (It made an existing
// directory 0700: -dir naming a shared 1777 directory locked every other
// user out of it.)
func PrivateDir(dir string) error {
	_, err := os.Lstat(dir)
	existed := err == nil
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	li, err := os.Lstat(dir)
	if err == nil {
		err = checkOwner(dir, li)
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if existed {
		return checkOwned(dir, fi)
	}
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 { // MkdirAll's mode is under the umask
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("state: making %s private: %w", dir, err)
		}
	}
	return nil
}

// SessionLogName returns the file name of a new session's record: the
// time, the proxy's pid and the server command's base name, e.g.
// "20260105-142233.123-4711-node.ndjson".
func SessionLogName(start time.Time, pid int, command string) string {
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, filepath.Base(command))
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("%s-%d-%s.ndjson", start.Format("20060102-150405.000"), pid, base)
}

// checkDir returns an error, naming dir and its owner, if dir (or a
// symbolic link to it) is not owned by this user or is writable by its
// group or others: what is in it may be another user's plant.
func checkDir(dir string) error {
	li, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := checkOwned(dir, li); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return checkOwned(dir, fi)
}

// FallbackDir is where a proxy keeps its status file (and record) when the
// state directory cannot be made or written: a per-user directory in the
// system's temporary directory, e.g. /tmp/mcpstdio-1000. `mcpstdio status`
// looks there too.
func FallbackDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpstdio-%d", os.Getuid()))
}
