package proxy

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRawPipeCalls: the raw system calls a forwarder makes on pipes say
// what the runtime's wrappers say: bytes moved, EAGAIN on an empty pipe,
// an errno for a bad descriptor.
func TestRawPipeCalls(t *testing.T) {
	pipe := func() (r, w int) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
		return p[0], p[1]
	}
	ar, aw := pipe()
	br, bw := pipe()
	buf := make([]byte, 64)
	if n, err := nbRead(ar, buf); err != unix.EAGAIN {
		t.Fatalf("nbRead of an empty pipe = %d, %v; want EAGAIN", n, err)
	}
	if n, err := nbWrite(aw, []byte("hello, pipe")); n != 11 || err != nil {
		t.Fatalf("nbWrite = %d, %v; want 11, nil", n, err)
	}
	if n, err := nbInq(ar); n != 11 || err != nil {
		t.Fatalf("nbInq = %d, %v; want 11, nil", n, err)
	}
	if n, err := nbTee(ar, bw, 5, unix.SPLICE_F_NONBLOCK); n != 5 || err != nil {
		t.Fatalf("nbTee = %d, %v; want 5, nil", n, err)
	}
	if n, err := nbSplice(ar, bw, 64, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK); n != 11 || err != nil {
		t.Fatalf("nbSplice = %d, %v; want 11 (tee took none), nil", n, err)
	}
	if n, err := nbSplice(ar, bw, 64, unix.SPLICE_F_NONBLOCK); err != unix.EAGAIN {
		t.Fatalf("nbSplice from an empty pipe = %d, %v; want EAGAIN", n, err)
	}
	n, err := nbRead(br, buf)
	if err != nil || !bytes.Equal(buf[:n], []byte("hellohello, pipe")) {
		t.Fatalf("nbRead = %q, %v; want the teed 5 bytes, then the 11 spliced", buf[:n], err)
	}
	if n, err := nbRead(-1, buf); err != unix.EBADF || n >= 0 {
		t.Fatalf("nbRead(-1) = %d, %v; want a negative count and EBADF", n, err)
	}
	if n, err := nbWrite(ar, buf[:1]); err != unix.EBADF || n >= 0 {
		t.Fatalf("nbWrite to a read end = %d, %v; want a negative count and EBADF", n, err)
	}
}
