package pipes_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
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

// reader drains a Valve in its own goroutine and reports what it read. It
// ends without error at io.EOF or ErrValveClosed.
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
				if err == io.EOF || errors.Is(err, pipes.ErrValveClosed) {
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

// waitFull waits until the pipe is effectively full: the kernel's fill
// level has no notification, so it is a bounded poll.
func waitFull(t *testing.T, p *pipes.Pipe, what string) {
	t.Helper()
	if _, err := p.Full(); err != nil {
		t.Skipf("pipe fill level not available on %s: %v", runtime.GOOS, err)
	}
	poll.Wait(t, testBound(t), what+": the pipe full", func() bool { full, _ := p.Full(); return full }, func() string {
		b, _ := p.Buffered()
		return fmt.Sprintf("%d of %d bytes buffered", b, p.Capacity())
	})
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

// gateReader is a reader whose reads end only when the test says so, and
// which reports every read deadline set on it: it makes one interleaving of
// a Valve's reader and its callers happen on purpose, with no timing.
type gateReader struct {
	entered   chan struct{} // one value per read begun
	interrupt chan struct{} // one value per past deadline set
	release   chan struct{} // a value ends one read with os.ErrDeadlineExceeded
	eof       chan struct{} // closed: reads end with io.EOF
}

func newGateReader() *gateReader {
	return &gateReader{
		entered:   make(chan struct{}, 64),
		interrupt: make(chan struct{}, 64),
		release:   make(chan struct{}),
		eof:       make(chan struct{}),
	}
}

func (g *gateReader) Read([]byte) (int, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return 0, os.ErrDeadlineExceeded
	case <-g.eof:
		return 0, io.EOF
	}
}

func (g *gateReader) SetReadDeadline(t time.Time) error {
	if !t.IsZero() {
		g.interrupt <- struct{}{}
	}
	return nil
}

// await waits for a value on ch, within the test's bound.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testBound(t)):
		t.Fatalf("%s: did not happen within %v", what, testBound(t))
		panic("unreachable")
	}
}

// TestValveStallRacingResume reproduces the reported hang step by step: the
// reader is blocked in a read; Stall interrupts it and waits for it to end;
// Resume runs meanwhile; the interrupted read ends and the reader, resumed,
// blocks in a new read. Stall must return (the later Resume supersedes it)
// and the valve must be open.
func TestValveStallRacingResume(t *testing.T) {
	g := newGateReader()
	v := pipes.NewValve(g)
	r := startReader(v)
	await(t, g.entered, "the reader's first read")
	stalled := make(chan struct{})
	go func() {
		v.Stall()
		close(stalled)
	}()
	await(t, g.interrupt, "Stall interrupting the read in flight")
	v.Resume()
	select {
	case g.release <- struct{}{}: // the interrupted read ends
	case <-time.After(testBound(t)):
		t.Fatal("the interrupted read was not waiting to end")
	}
	await(t, g.entered, "the resumed reader's next read")
	await(t, stalled, "Stall racing Resume to return (Stall is stuck waiting for a read that Resume let start)")
	if v.Stalled() {
		t.Error("Stalled() = true, want false: the Resume began after the Stall")
	}
	v.Close()
	close(g.eof)
	wait(t, r.done, "reader")
}

// signalReader is an *os.File that reports each read it begins.
type signalReader struct {
	*os.File
	entered chan struct{}
}

func (s signalReader) Read(p []byte) (int, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	return s.File.Read(p)
}

// TestValveStallRacingResumeOnPipe is the reported scenario on a real pipe,
// 400 times: the reader blocked in read(2) on an idle pipe, Stall and Resume
// started together from two goroutines. Neither may hang, and the valve must
// still deliver what is written once it is open.
func TestValveStallRacingResumeOnPipe(t *testing.T) {
	for i := range 400 {
		p, err := pipes.New()
		if err != nil {
			t.Fatal(err)
		}
		sr := signalReader{p.R, make(chan struct{}, 1)}
		v := pipes.NewValve(sr)
		r := startReader(v)
		await(t, sr.entered, "the reader's first read")
		start := make(chan struct{})
		stallDone, resumeDone := make(chan error, 1), make(chan error, 1)
		go func() { <-start; v.Stall(); stallDone <- nil }()
		go func() { <-start; v.Resume(); resumeDone <- nil }()
		close(start)
		wait(t, stallDone, fmt.Sprintf("run %d: Stall racing Resume", i))
		wait(t, resumeDone, fmt.Sprintf("run %d: Resume racing Stall", i))
		v.Resume()
		if _, err := p.W.Write([]byte("after")); err != nil {
			t.Fatal(err)
		}
		p.W.Close()
		wait(t, r.done, fmt.Sprintf("run %d: reader", i))
		if got := r.got.String(); got != "after" {
			t.Fatalf("run %d: read %q, want \"after\"", i, got)
		}
		v.Close()
		p.Close()
	}
}

// TestValveCloseReleasesStall: a Stall waiting for a read that does not end
// returns when the valve is closed, well before its one-second bound.
func TestValveCloseReleasesStall(t *testing.T) {
	g := newGateReader()
	v := pipes.NewValve(g)
	r := startReader(v)
	await(t, g.entered, "the reader's first read")
	stalled := make(chan time.Time, 1)
	go func() {
		v.Stall()
		stalled <- time.Now()
	}()
	await(t, g.interrupt, "Stall interrupting the read in flight")
	closed := time.Now()
	v.Close()
	if d := await(t, stalled, "Stall after Close").Sub(closed); d >= time.Second {
		t.Errorf("Stall returned %v after Close: it waited out its bound instead of returning on Close", d)
	}
	close(g.eof)
	wait(t, r.done, "reader")
}

// TestValveStallAfterRacingStall: a StallAfter waiting for the read in flight
// is superseded by a Stall that begins meanwhile, and must not open the
// valve once that read ends.
func TestValveStallAfterRacingStall(t *testing.T) {
	g := newGateReader()
	v := pipes.NewValve(g)
	r := startReader(v)
	await(t, g.entered, "the reader's first read")
	afterDone, stallDone := make(chan error, 1), make(chan error, 1)
	go func() { v.StallAfter(100); afterDone <- nil }()
	await(t, g.interrupt, "StallAfter interrupting the read in flight")
	go func() { v.Stall(); stallDone <- nil }()
	wait(t, afterDone, "StallAfter superseded by a later Stall")
	select {
	case g.release <- struct{}{}:
	case <-time.After(testBound(t)):
		t.Fatal("the interrupted read was not waiting to end")
	}
	wait(t, stallDone, "Stall")
	if !v.Stalled() {
		t.Error("Stalled() = false after StallAfter then Stall: the earlier StallAfter opened the valve")
	}
	if n := v.Reads(); n != 1 {
		t.Errorf("Reads() = %d after the stall, want 1 (no read after the interrupted one)", n)
	}
	v.Close()
	wait(t, r.done, "reader")
}

// TestValveStallBlockingFile: an *os.File whose Fd method was called is in
// blocking mode and ignores read deadlines once in read(2). Stall cannot
// interrupt such a read and returns after its bound instead of hanging; the
// read's bytes are delivered or still in the pipe, never lost.
func TestValveStallBlockingFile(t *testing.T) {
	t.Parallel()
	p := newPipe(t)
	_ = p.R.Fd() // puts the read end in blocking mode
	sr := signalReader{p.R, make(chan struct{}, 1)}
	v := pipes.NewValve(sr)
	r := startReader(v)
	await(t, sr.entered, "the reader's first read")
	stalled := make(chan error, 1)
	go func() { v.Stall(); stalled <- nil }()
	wait(t, stalled, "Stall on a reader that ignores its deadline")
	if _, err := p.W.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	p.W.Close()
	v.Close()
	wait(t, r.done, "reader")
	// The signal comes as the read begins, a moment before read(2): a
	// read that had not reached the kernel when Stall set its deadline is
	// interrupted after all (the poller checks the deadline first), and
	// then its bytes are still in the pipe. Either way none is lost.
	rest, err := io.ReadAll(p.R)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.got.String(); got+string(rest) != "late" {
		t.Errorf("the read in flight delivered %q and the pipe held %q; want \"late\" between them", got, rest)
	}
}

// noDeadline is a reader with a SetReadDeadline that always fails.
type noDeadline struct{ *gateReader }

func (noDeadline) SetReadDeadline(time.Time) error { return os.ErrNoDeadline }

// TestValveStallDeadlineFails: when the reader refuses the deadline, Stall
// does not wait for a read it cannot interrupt.
func TestValveStallDeadlineFails(t *testing.T) {
	g := newGateReader()
	v := pipes.NewValve(noDeadline{g})
	r := startReader(v)
	await(t, g.entered, "the reader's first read")
	stalled := make(chan error, 1)
	go func() { v.Stall(); stalled <- nil }()
	wait(t, stalled, "Stall on a reader that refuses deadlines")
	v.Close()
	close(g.eof)
	wait(t, r.done, "reader")
}

func TestValveWaitStalledClosed(t *testing.T) {
	p := newPipe(t)
	v := pipes.NewValve(p.R)
	done := make(chan error, 1)
	go func() { done <- v.WaitStalled(t.Context()) }()
	v.Close()
	if err := await(t, done, "WaitStalled after Close"); !errors.Is(err, pipes.ErrValveClosed) {
		t.Errorf("WaitStalled on a valve closed while open = %v, want ErrValveClosed", err)
	}
	if err := v.WaitStalled(t.Context()); !errors.Is(err, pipes.ErrValveClosed) {
		t.Errorf("WaitStalled on a closed valve = %v, want ErrValveClosed", err)
	}
}
