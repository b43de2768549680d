//go:build !unix

package state

// pidGone cannot tell here: a status file goes stale by its age alone.
func pidGone(int) (gone, known bool) { return false, false }
