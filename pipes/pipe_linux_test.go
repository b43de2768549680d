//go:build linux

package pipes_test

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// tryWrite writes b with one non-blocking write(2) and reports what the
// kernel took; EAGAIN means the pipe refused the writer.
func tryWrite(t *testing.T, f *os.File, b []byte) (int, error) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), b)
		return true // never wait: we want the kernel's answer now
	}); err != nil {
		t.Fatal(err)
	}
	return n, werr
}

func TestPipeCapacity(t *testing.T) {
	page := os.Getpagesize()
	for _, tt := range []struct{ ask, want int }{
		{1, page},
		{page, page},
		{page + 1, 2 * page},
		{3 * page, 4 * page}, // rounded up to a power-of-two number of pages
		{65536, 65536},
	} {
		p := newPipe(t)
		got, err := p.SetCapacity(tt.ask)
		if err != nil || got != tt.want {
			t.Errorf("SetCapacity(%d) = %d, %v; want %d, nil", tt.ask, got, err, tt.want)
		}
		if c := p.Capacity(); c != tt.want {
			t.Errorf("after SetCapacity(%d): Capacity() = %d, want %d", tt.ask, c, tt.want)
		}
	}
	if _, err := newPipe(t).SetCapacity(0); err == nil {
		t.Error("SetCapacity(0) succeeded, want an error")
	}
}

func TestPipeBufferedAndFull(t *testing.T) {
	p := newPipe(t)
	page := os.Getpagesize()
	c, err := p.SetCapacity(4 * page)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := tryWrite(t, p.W, make([]byte, 1000)); n != 1000 {
		t.Fatalf("write of 1000 bytes took %d", n)
	}
	if b, err := p.Buffered(); b != 1000 || err != nil {
		t.Errorf("Buffered() = %d, %v; want 1000, nil", b, err)
	}
	if full, err := p.Full(); full || err != nil {
		t.Errorf("Full() with 1000 of %d bytes = %v, %v; want false, nil", c, full, err)
	}
	total := 1000
	for {
		n, err := tryWrite(t, p.W, make([]byte, page))
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if total > 2*c {
			t.Fatalf("pipe of %d bytes took %d bytes", c, total)
		}
	}
	if b, _ := p.Buffered(); b != total {
		t.Errorf("Buffered() = %d, want the %d bytes written", b, total)
	}
	if full, err := p.Full(); !full || err != nil {
		t.Errorf("Full() with a page-sized write refused = %v, %v; want true, nil", full, err)
	}
}

// TestPipeOnePage documents the edge of the tolerance: a pipe of one page
// holds one slot, into which small writes merge, so it is Full only when
// entirely full.
func TestPipeOnePage(t *testing.T) {
	p := newPipe(t)
	page := os.Getpagesize()
	if _, err := p.SetCapacity(page); err != nil {
		t.Fatal(err)
	}
	if full, _ := p.Full(); full {
		t.Error("Full() on an empty pipe = true")
	}
	tryWrite(t, p.W, make([]byte, 85))
	if full, _ := p.Full(); full {
		t.Error("Full() on a one-page pipe holding 85 bytes = true, want false")
	}
	if n, err := tryWrite(t, p.W, make([]byte, 100)); n != 100 || err != nil {
		t.Errorf("a small write into the partly filled page took %d, %v; want 100, nil", n, err)
	}
	tryWrite(t, p.W, make([]byte, page-185))
	if full, _ := p.Full(); !full {
		t.Error("Full() on an entirely full one-page pipe = false, want true")
	}
}

// TestPipeFullWithFragmentedWrites reproduces the measured fact the design
// rests on: writes that do not share pages exhaust the pipe's page slots
// while Buffered is below Capacity. Full must still say full.
func TestPipeFullWithFragmentedWrites(t *testing.T) {
	p := newPipe(t)
	page := os.Getpagesize()
	c := p.Capacity()
	chunk := make([]byte, page-200) // too big to merge into the previous page
	var refused bool
	for range 2 * c / page {
		if _, err := tryWrite(t, p.W, chunk); errors.Is(err, unix.EAGAIN) {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatalf("the pipe of %d bytes never refused %d-byte writes", c, len(chunk))
	}
	b, _ := p.Buffered()
	if b >= c {
		t.Fatalf("Buffered() = %d, Capacity() = %d: expected the writer refused below capacity", b, c)
	}
	t.Logf("writer refused with %d of %d bytes buffered", b, c)
	if full, err := p.Full(); !full || err != nil {
		t.Errorf("Full() = %v, %v with the writer refused at %d/%d; want true", full, err, b, c)
	}
}

func TestPipeCloseTwice(t *testing.T) {
	p, err := pipes.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}
