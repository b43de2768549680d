//go:build !unix

package main

import "os"

// terminalWidth reports false: outside Unix, probe prints plain lines and
// no live status.
func terminalWidth(f *os.File) (width int, ok bool) { return 0, false }
