package proxy

import (
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// Forwarding, the observer, verdicts, the record, the status file and all
// faults but sigstop use only portable APIs: the proxy knows its own write
// is blocked because it is still in it. On Linux it adds evidence (pipe
// fill levels with FIONREAD, settable pipe capacity) and kills the server
// if the proxy dies (Pdeathsig). On Unix the server runs in its own
// process group, SIGINT, SIGTERM and SIGHUP given to Proxy.Signal reach
// the server's pid, and a server killed by signal n makes the exit status
// 128+n. On Windows there is no SIGTERM: Proxy.Signal can only kill
// (os.Kill), a console's Ctrl-C reaches the server directly, and the exit
// status is the server's exit code. This package is tested on Linux only.

// How the forwarders move bytes: by the rule of splice_linux.go (auto), or,
// for the tests that check both paths, always by copying or by splice
// wherever the streams allow it.
const (
	fwdAuto int32 = iota
	fwdCopy
	fwdSplice
)

// forwarding is the mode proxies started from now on use; only tests
// change it (export_test.go).
var forwarding atomic.Int32

// envNames returns the names of the variables in env (os.Environ() if env
// is nil), sorted: never their values.
func envNames(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// pipeCapacity returns the kernel capacity of the pipe behind s, if s is an
// *os.File on a pipe and the system reports it; else 0.
func pipeCapacity(s any) int {
	f := fileOf(s)
	if f == nil {
		return 0
	}
	return (&pipes.Pipe{R: f}).Capacity()
}

// pipeBuffered returns the unread bytes in the pipe behind s, and whether
// the system reports it (Linux FIONREAD works on either end of a pipe).
func pipeBuffered(s any) (int, bool) {
	f := fileOf(s)
	if f == nil {
		return 0, false
	}
	n, err := (&pipes.Pipe{R: f}).Buffered()
	return n, err == nil
}

// fileOf returns the *os.File behind a stream, if there is one.
func fileOf(s any) *os.File {
	switch v := s.(type) {
	case *os.File:
		return v
	case interface{ File() *os.File }:
		return v.File()
	}
	return nil
}
