// Package testkit holds what the library's own tests share: running a test
// against a server in-process and as a child process under the same
// subtest names, in the same order.
package testkit

import "testing"

// Ways are the two ways a server runs in the tests, in the order they run:
// a goroutine of the test binary on real pipes, and a child process.
var Ways = []string{"in-process", "child"}

// EachWay runs f as two subtests of t, "in-process" and "child", in that
// order; child tells f which.
func EachWay(t *testing.T, f func(t *testing.T, child bool)) {
	t.Helper()
	for _, way := range Ways {
		t.Run(way, func(t *testing.T) { f(t, way == "child") })
	}
}

// EachWayB is EachWay for benchmarks.
func EachWayB(b *testing.B, f func(b *testing.B, child bool)) {
	b.Helper()
	for _, way := range Ways {
		b.Run(way, func(b *testing.B) { f(b, way == "child") })
	}
}
