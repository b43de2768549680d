//go:build !unix

package proxy

// hangup is not available here.
type hangup struct{}

// watchHangup cannot watch a stream here: the proxy sees the host close
// its stdin only by reading it, and never sees it close stdout or stderr
// while it does not write them.
func watchHangup(any, bool, func()) *hangup { return nil }

func (h *hangup) stop() {}
