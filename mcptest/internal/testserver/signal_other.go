//go:build !unix

package testserver

func ignoreSIGTERM() {}

func blockUntilSignal() { select {} }
