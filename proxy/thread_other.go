//go:build !linux

package proxy

// lowerPriority is false: elsewhere the observer has no thread of its own.
func lowerPriority() bool { return false }
