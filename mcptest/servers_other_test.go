//go:build !unix

package mcptest_test

func processGone(int) error { return nil }
