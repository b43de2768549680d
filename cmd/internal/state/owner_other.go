//go:build !unix

package state

import (
	"io/fs"
	"os"
)

// checkOwned is the Unix check of who owns a state directory or status
// file; elsewhere the per-user directories are private already.
func checkOwned(path string, fi fs.FileInfo) error { return nil }

func checkOwner(path string, fi fs.FileInfo) error { return nil }

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

// Flags of openPrivate: there is none to add here.
const (
	oNoFollow = 0
	oNonBlock = 0
)

func isLoop(error) bool { return false }
