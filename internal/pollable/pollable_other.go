//go:build !unix

package pollable

import "os"

// Dup is not available here: it returns nil, and a read or write blocked
// on a pipe ends only when the other side acts.
func Dup(*os.File) *os.File { return nil }

// Blocking does nothing here.
func Blocking(*os.File) {}
