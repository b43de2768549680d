//go:build !unix

package mcptest_test

func ignoreSIGTERM() {}

func blockUntilSignal() { select {} }

func processGone(int) error { return nil }
