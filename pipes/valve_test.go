package pipes_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// pattern returns n deterministic bytes in which every offset differs from
// its neighbours, so a lost or duplicated byte changes the checksum.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// reader drains a Valve in its own goroutine and reports what it read.
type reader struct {
	got  bytes.Buffer
	done chan error
}

func startReader(v *pipes.Valve) *reader {
	r := &reader{done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := v.Read(buf)
			r.got.Write(buf[:n])
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				r.done <- err
				return
			}
		}
	}()
	return r
}

func newPipe(t *testing.T) *pipes.Pipe {
	t.Helper()
	p, err := pipes.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func startWriter(t *testing.T, p *pipes.Pipe, data []byte) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := p.W.Write(data)
		done <- errors.Join(err, p.W.Close())
	}()
	return done
}

// waitFull polls the kernel's fill level until the pipe is effectively full:
// the event this test waits for has no notification, so it is a bounded poll.
func waitFull(t *testing.T, p *pipes.Pipe, what string) {
	t.Helper()
	deadline := time.Now().Add(testBound(t))
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		full, err := p.Full()
		if err != nil {
			t.Skipf("pipe fill level not available on %s: %v", runtime.GOOS, err)
		}
		if full {
			return
		}
		if time.Now().After(deadline) {
			b, _ := p.Buffered()
			t.Fatalf("%s: pipe never filled: %d of %d bytes buffered", what, b, p.Capacity())
		}
		<-tick.C
	}
}

func waitStalled(t *testing.T, v *pipes.Valve) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testBound(t))
	defer cancel()
	if err := v.WaitStalled(ctx); err != nil {
		t.Fatalf("WaitStalled: %v after %d bytes", err, v.BytesRead())
	}
}

func wait(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(testBound(t)):
		t.Fatalf("%s: did not finish within %v", what, testBound(t))
	}
}

func TestValveStallFillsPipe(t *testing.T) {
	p := newPipe(t)
	v := pipes.NewValve(p.R)
	defer v.Close()
	r := startReader(v)
	v.Stall() // the reader may be blocked in read(2) already: Stall interrupts it
	if !v.Stalled() || v.StalledSince().IsZero() {
		t.Fatalf("after Stall: Stalled() = %v, StalledSince() = %v", v.Stalled(), v.StalledSince())
	}
	data := pattern(1 << 20)
	wdone := startWriter(t, p, data)
	waitFull(t, p, "writer with reads stalled")
	if got := v.BytesRead(); got != 0 {
		t.Errorf("BytesRead() = %d while stalled from the start, want 0", got)
	}
	select {
	case err := <-wdone:
		t.Fatalf("writer finished (%v) while the pipe was stalled", err)
	default:
	}
	v.Resume()
	if v.Stalled() || !v.StalledSince().IsZero() {
		t.Errorf("after Resume: Stalled() = %v, StalledSince() = %v", v.Stalled(), v.StalledSince())
	}
	wait(t, wdone, "writer after Resume")
	wait(t, r.done, "reader")
	if sha256.Sum256(r.got.Bytes()) != sha256.Sum256(data) || r.got.Len() != len(data) {
		t.Errorf("read %d bytes with a different checksum from the %d written", r.got.Len(), len(data))
	}
	if v.BytesRead() != int64(len(data)) {
		t.Errorf("BytesRead() = %d, want %d", v.BytesRead(), len(data))
	}
}

// TestValveStallMidStream stalls while data is flowing: nothing is lost or
// duplicated around the interruption, and no byte passes while stalled.
func TestValveStallMidStream(t *testing.T) {
	p := newPipe(t)
	v := pipes.NewValve(p.R)
	defer v.Close()
	data := pattern(4 << 20)
	v.StallAfter(300_000) // let some through, then stall mid-stream
	r := startReader(v)
	wdone := startWriter(t, p, data)
	waitStalled(t, v)
	waitFull(t, p, "writer after StallAfter")
	before := v.BytesRead()
	if before != 300_000 {
		t.Errorf("StallAfter(300000): BytesRead() = %d once stalled", before)
	}
	v.Stall() // already stalled: must change nothing and return at once
	waitFull(t, p, "writer after Stall")
	if after := v.BytesRead(); after != before {
		t.Errorf("BytesRead() moved from %d to %d while stalled", before, after)
	}
	v.Resume()
	wait(t, wdone, "writer")
	wait(t, r.done, "reader")
	if !bytes.Equal(r.got.Bytes(), data) {
		t.Errorf("read %d bytes, want the %d written, byte for byte", r.got.Len(), len(data))
	}
}

func TestValveStallAfterIsExact(t *testing.T) {
	for _, n := range []int64{1, 4095, 4096, 65537, 300_001} {
		p := newPipe(t)
		v := pipes.NewValve(p.R)
		data := pattern(2 << 20)
		v.StallAfter(n)
		r := startReader(v)
		wdone := startWriter(t, p, data)
		waitStalled(t, v)
		waitFull(t, p, "writer after StallAfter")
		if got := v.BytesRead(); got != n {
			t.Errorf("StallAfter(%d): BytesRead() = %d", n, got)
		}
		if !v.Stalled() {
			t.Errorf("StallAfter(%d): Stalled() = false after the allowance was used", n)
		}
		// A second StallAfter counts from its own call.
		v.StallAfter(1000)
		waitStalled(t, v)
		waitFull(t, p, "writer after second StallAfter")
		if got := v.BytesRead(); got != n+1000 {
			t.Errorf("StallAfter(%d) then StallAfter(1000): BytesRead() = %d, want %d", n, got, n+1000)
		}
		v.Resume()
		wait(t, wdone, "writer")
		wait(t, r.done, "reader")
		if !bytes.Equal(r.got.Bytes(), data) {
			t.Errorf("StallAfter(%d): read %d bytes, not the %d written", n, r.got.Len(), len(data))
		}
		v.Close()
	}
}

func TestValveCloseReleasesStalledRead(t *testing.T) {
	p := newPipe(t)
	v := pipes.NewValve(p.R)
	v.Stall()
	done := make(chan error, 1)
	go func() {
		_, err := v.Read(make([]byte, 10))
		done <- err
	}()
	v.Close()
	select {
	case err := <-done:
		if !errors.Is(err, pipes.ErrValveClosed) {
			t.Errorf("Read after Close = %v, want ErrValveClosed", err)
		}
	case <-time.After(testBound(t)):
		t.Fatal("a Read waiting on a stall did not return after Close")
	}
	if err := v.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

// TestValveWithoutDeadlines uses a reader that cannot be interrupted: Stall
// on an idle valve still holds back every later read.
func TestValveWithoutDeadlines(t *testing.T) {
	v := pipes.NewValve(strings.NewReader("hello"))
	v.StallAfter(2)
	buf := make([]byte, 10)
	n, err := v.Read(buf)
	if n != 2 || err != nil || string(buf[:n]) != "he" {
		t.Fatalf("Read = %d %q, %v; want 2 \"he\", nil", n, buf[:n], err)
	}
	if !v.Stalled() {
		t.Fatal("not stalled after the allowance")
	}
	v.Resume()
	rest, err := io.ReadAll(v)
	if string(rest) != "llo" || err != nil {
		t.Errorf("after Resume read %q, %v; want \"llo\"", rest, err)
	}
}
