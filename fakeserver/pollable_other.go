//go:build !unix

package fakeserver

import "os"

// pollable is not available here: a read or write blocked on a pipe ends
// only when the other side acts.
func pollable(*os.File) *os.File { return nil }
