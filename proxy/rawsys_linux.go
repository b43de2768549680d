//go:build linux

package proxy

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls a forwarder makes on a pipe that never wait for it —
// read(2) and write(2) on a non-blocking pipe, tee(2) and splice(2) with
// SPLICE_F_NONBLOCK, FIONREAD — are made as raw system calls, which keep
// the goroutine's Go processor (P): only poll(2), which waits, goes through
// the runtime's system call path, which lets another goroutine have the P
// while it waits. A call that returns at once gains nothing from that path
// and costs: when both of a 2-core machine's Ps are in system calls
// (a forwarder in poll, the other in splice), the runtime's monitor
// thread takes one back every 20 µs and wakes a thread to run it, and the
// forwarder that returns without its P hands itself to another thread.
// Measured on 2 cores (internal/benchratios' relay benchmarks): on a
// stream of 1 MiB lines the monitor thread, sysmon, took 18% of the proxy
// process's CPU samples with the runtime's path and 3% with raw calls
// (perf record), the stream's rate unchanged within the noise (0.81x and
// 0.77x a splice relay, medians of six interleaved pairs); the small round
// trip's added latency, as a multiple of a read/write relay's, went from
// 1.49x to 1.25x and from 1.52x to 1.28x in two sets of interleaved pairs
// (load average 1.5-1.7), and from 1.17x to 1.40x in a third (2.0-2.7),
// the proxy's CPU per round trip from 34.8 to 30.1 µs (medians) in the
// second. None of these calls
// waits for another process: at most for the pipe's lock, which a
// process holds while it copies one write's pages. A call on a file that
// is not a pipe (which O_NONBLOCK may not keep from waiting: a regular
// file on a slow disk) takes the runtime's path (rawFile.pipe).

// nbRead is read(2) on a non-blocking pipe.
func nbRead(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(bufPtr(p)), uintptr(len(p)))
	return int(n), errnoErr(e)
}

// nbWrite is write(2) on a non-blocking pipe.
func nbWrite(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(bufPtr(p)), uintptr(len(p)))
	return int(n), errnoErr(e)
}

// nbSplice is splice(2) from pipe src to pipe dst; flags must have
// SPLICE_F_NONBLOCK.
func nbSplice(src, dst, n, flags int) (int, error) {
	k, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(src), 0, uintptr(dst), 0, uintptr(n), uintptr(flags))
	return int(k), errnoErr(e)
}

// nbTee is tee(2) from pipe src to pipe dst; flags must have
// SPLICE_F_NONBLOCK.
func nbTee(src, dst, n, flags int) (int, error) {
	k, _, e := unix.RawSyscall6(unix.SYS_TEE, uintptr(src), uintptr(dst), uintptr(n), uintptr(flags), 0, 0)
	return int(k), errnoErr(e)
}

// nbInq is FIONREAD on a pipe: how many bytes it holds.
func nbInq(fd int) (int, error) {
	var v int32
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.TIOCINQ), uintptr(unsafe.Pointer(&v)))
	return int(v), errnoErr(e)
}

func bufPtr(p []byte) unsafe.Pointer {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Pointer(&p[0])
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
