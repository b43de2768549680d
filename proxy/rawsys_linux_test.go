package proxy

import (
	"bytes"
	"os"
	"path/filepath"
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

// TestRawPipeCallsNeverWait: a pipe whose O_NONBLOCK another process
// cleared (it is the open file's, shared) is still read and written
// without waiting: an empty pipe's read and a full pipe's write say EAGAIN
// at once. Where RWF_NOWAIT is not supported for pipes (Linux before 6.4)
// the calls say so, and rawFile takes the runtime's path.
func TestRawPipeCallsNeverWait(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil { // blocking
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	buf := make([]byte, 64<<10)
	n, err := nbRead(p[0], buf)
	if !supported(err) {
		t.Skipf("RWF_NOWAIT is not supported for pipes on this kernel (%v): rawFile reads and writes them through the runtime", err)
	}
	if err != unix.EAGAIN {
		t.Fatalf("nbRead of an empty blocking pipe = %d, %v; want EAGAIN", n, err)
	}
	total := 0
	for {
		n, err := nbWrite(p[1], buf)
		if err == unix.EAGAIN {
			break
		}
		if err != nil || n <= 0 {
			t.Fatalf("nbWrite = %d, %v", n, err)
		}
		if total += n; total > 64<<20 {
			t.Fatalf("wrote %d bytes into a pipe without EAGAIN", total)
		}
	}
	if inq, _ := nbInq(p[0]); inq != total || total == 0 {
		t.Errorf("the full pipe holds %d bytes; the writes said %d", inq, total)
	}
}

// TestRawFileFIFO: a named FIFO, which may not take RWF_NOWAIT where a
// pipe does, is read and written whole through a rawFile either way.
func TestRawFileFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	rf, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	wf, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	r, w := newRawFile(rf), newRawFile(wf)
	if r == nil || w == nil || !r.pipe || !w.pipe {
		t.Fatalf("rawFiles of a FIFO: %v, %v; want both, as pipes", r, w)
	}
	defer r.release()
	defer w.release()
	_, nerr := nbRead(r.fd, make([]byte, 1))
	if n, err := w.Write([]byte("hello, fifo\n")); n != 12 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "hello, fifo\n" {
		t.Fatalf("Read = %q, %v; want the line written", buf[:n], err)
	}
	if r.pipe != supported(nerr) {
		t.Errorf("after a read, rawFile reads raw: %v; RWF_NOWAIT on this FIFO: %v", r.pipe, nerr)
	}
}
