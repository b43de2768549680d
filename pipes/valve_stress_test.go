package pipes_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// TestValveInterleavings drives one real os.Pipe, fed without pause by a
// writer, through 10,000 episodes. Each episode puts a new Valve on the
// pipe, reads from it in one goroutine and calls Stall, StallAfter, Resume
// and Close on it from several others in random order, then closes it. It
// checks that no call hangs (the failure names the stuck calls), that every
// byte written is read exactly once across all the episodes (length and
// SHA-256), that each Valve counts what its reader got, and, in the
// episodes where nothing races them, that StallAfter(n) lets exactly n bytes
// through and that nothing passes a returned Stall.
func TestValveInterleavings(t *testing.T) {
	episodes := 10_000
	if raceEnabled {
		// Each episode costs about 0.5 ms of CPU under the race detector;
		// .ci/run runs the 10,000 without it.
		episodes = 2_500
	}
	if testing.Short() {
		episodes = 1_000
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	deadline := time.Now().Add(testBound(t))

	p := newPipe(t)
	w := startStreamWriter(p.W, seed)
	defer w.stop()
	read := sha256.New()
	var total int64
	kinds := map[string]int{}
	for i := range episodes {
		e := &episode{v: pipes.NewValve(p.R), sum: read, deadline: deadline, rng: rng}
		var err error
		switch k := rng.IntN(10); {
		case k < 3:
			e.kind, err = "racing", e.racing()
		case k < 6:
			// The writer pauses: the reader soon blocks on an empty pipe,
			// where a read interrupted by Stall and restarted by a racing
			// Resume stays blocked.
			e.idle = w
			e.kind, err = "racing, idle pipe", e.racing()
		case k < 8:
			e.kind, err = "stall-after", e.stallAfterExact()
		default:
			e.kind, err = "racing stalls", e.racingStalls()
		}
		kinds[e.kind]++
		if err != nil {
			t.Fatalf("episode %d of %d (%s, seed %d): %v", i, episodes, e.kind, seed, err)
		}
		total += e.got.Load()
	}

	// Drain the rest and compare with what was written.
	w.stop()
	e := &episode{v: pipes.NewValve(p.R), sum: read, deadline: deadline}
	e.startReader()
	if err := e.waitReader(); err != nil {
		t.Fatalf("draining the pipe: %v", err)
	}
	total += e.got.Load()
	if err := w.wait(deadline); err != nil {
		t.Fatal(err)
	}
	if total != w.n.Load() {
		t.Errorf("read %d bytes in all, the writer wrote %d", total, w.n.Load())
	}
	if got, want := read.Sum(nil), w.sum.Sum(nil); string(got) != string(want) {
		t.Errorf("the %d bytes read differ from the %d written (SHA-256 %x, want %x)", total, w.n.Load(), got, want)
	}
	t.Logf("%d episodes %v, %d bytes through", episodes, kinds, total)
}

// streamWriter writes a deterministic stream into a pipe until stopped, then
// closes the pipe, keeping the stream's length and SHA-256. It can be paused,
// so that the reader blocks in read(2) on an idle pipe.
type streamWriter struct {
	w    *os.File
	done chan error
	n    atomic.Int64
	sum  hash.Hash

	mu      sync.Mutex
	cond    *sync.Cond
	paused  bool
	stopped bool
}

func startStreamWriter(w *os.File, seed uint64) *streamWriter {
	s := &streamWriter{w: w, done: make(chan error, 1), sum: sha256.New()}
	s.cond = sync.NewCond(&s.mu)
	tape := pattern(1<<20 + 17)
	rng := rand.New(rand.NewPCG(seed, 1))
	go func() {
		var off int
		for s.next() {
			size := 1 + rng.IntN(16<<10)
			if off+size > len(tape) {
				off = 0
			}
			chunk := tape[off : off+size]
			off += size
			n, err := w.Write(chunk)
			s.sum.Write(chunk[:n])
			s.n.Add(int64(n))
			if err != nil {
				s.done <- fmt.Errorf("writer: %v after %d bytes", err, s.n.Load())
				return
			}
		}
		s.done <- w.Close()
	}()
	return s
}

// next waits while the writer is paused and reports whether to write on.
func (s *streamWriter) next() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.paused && !s.stopped {
		s.cond.Wait()
	}
	return !s.stopped
}

// pause stops or restarts writing, after the write in progress.
func (s *streamWriter) pause(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = on
	s.cond.Broadcast()
}

// stop asks the writer to close the pipe after its current write.
func (s *streamWriter) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.cond.Broadcast()
}

func (s *streamWriter) wait(deadline time.Time) error {
	select {
	case err := <-s.done:
		return err
	case <-time.After(time.Until(deadline)):
		return fmt.Errorf("writer: still writing at the deadline after %d bytes", s.n.Load())
	}
}

// episode is one Valve's life on the shared pipe.
type episode struct {
	kind     string
	v        *pipes.Valve
	sum      hash.Hash // of everything read, across episodes
	deadline time.Time
	rng      *rand.Rand
	idle     *streamWriter // if set, paused while the calls run

	got        atomic.Int64 // bytes this episode's reader got
	readerDone chan error

	mu    sync.Mutex
	calls []inProgress // per caller: the call in progress and its script
}

// inProgress is a call a script is in, formatted only if it is stuck.
type inProgress struct {
	script []call
	j      int // the index in script of the call in progress, -1 if none
	since  time.Time
}

// startReader reads the Valve into e.sum until it is closed.
func (e *episode) startReader() {
	e.readerDone = make(chan error, 1)
	size := 64 << 10
	if e.rng != nil {
		size = 1 + e.rng.IntN(64<<10)
	}
	go func() {
		buf := make([]byte, size)
		for {
			n, err := e.v.Read(buf)
			e.sum.Write(buf[:n])
			e.got.Add(int64(n))
			if err != nil {
				if errors.Is(err, pipes.ErrValveClosed) || errors.Is(err, io.EOF) {
					err = nil
				}
				e.readerDone <- err
				return
			}
		}
	}()
}

// waitReader waits for the reader to end and checks its count.
func (e *episode) waitReader() error {
	select {
	case err := <-e.readerDone:
		if err != nil {
			return fmt.Errorf("reader: %v", err)
		}
	case <-time.After(time.Until(e.deadline)):
		return fmt.Errorf("reader: Read stuck at the deadline after %d bytes, valve closed; %s", e.got.Load(), e.state())
	}
	if n, got := e.v.BytesRead(), e.got.Load(); n != got {
		return fmt.Errorf("BytesRead() = %d, the reader got %d", n, got)
	}
	return nil
}

func (e *episode) state() string {
	return fmt.Sprintf("Stalled() = %v, BytesRead() = %d, Reads() = %d", e.v.Stalled(), e.v.BytesRead(), e.v.Reads())
}

// call is one control call in a script.
type call struct {
	name string
	n    int64
}

func (c call) String() string {
	if c.name == "StallAfter" {
		return fmt.Sprintf("StallAfter(%d)", c.n)
	}
	return c.name + "()"
}

func (c call) do(v *pipes.Valve) {
	switch c.name {
	case "Stall":
		v.Stall()
	case "StallAfter":
		v.StallAfter(c.n)
	case "Resume":
		v.Resume()
	case "Close":
		v.Close()
	case "Gosched":
		runtime.Gosched()
	}
}

func (e *episode) randomCall() call {
	switch k := e.rng.IntN(100); {
	case k < 33:
		return call{name: "Stall"}
	case k < 58:
		return call{name: "StallAfter", n: e.randomSize()}
	case k < 88:
		return call{name: "Resume"}
	case k < 93:
		return call{name: "Close"}
	default:
		return call{name: "Gosched"}
	}
}

func (e *episode) randomSize() int64 {
	switch e.rng.IntN(4) {
	case 0:
		return int64(e.rng.IntN(3)) // 0, 1, 2
	case 1:
		return []int64{4095, 4096, 4097, 65535, 65536, 65537}[e.rng.IntN(6)]
	default:
		return 1 + e.rng.Int64N(200_000)
	}
}

// run runs the scripts from one goroutine each, released together, and
// waits for all of them; if one is stuck at the deadline, the error names
// every call still in progress.
func (e *episode) run(scripts [][]call) error {
	e.calls = make([]inProgress, len(scripts))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, script := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j, c := range script {
				e.mu.Lock()
				e.calls[i] = inProgress{script: script, j: j, since: time.Now()}
				e.mu.Unlock()
				c.do(e.v)
			}
			e.mu.Lock()
			e.calls[i] = inProgress{j: -1}
			e.mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	close(start)
	select {
	case <-done:
		return nil
	case <-time.After(time.Until(e.deadline)):
		e.mu.Lock()
		defer e.mu.Unlock()
		var stuck []string
		for i, c := range e.calls {
			if c.script != nil && c.j >= 0 {
				stuck = append(stuck, fmt.Sprintf("goroutine %d: %v (call %d of %v) since %s", i, c.script[c.j], c.j+1, c.script, c.since.Format("15:04:05.000000")))
			}
		}
		return fmt.Errorf("calls stuck at the deadline:\n\t%s\n%s", strings.Join(stuck, "\n\t"), e.state())
	}
}

// racing: two to four goroutines run one to five random calls each while
// the reader reads and an observer waits for a stall; then the valve is
// closed. Nothing may hang, and the observer must be released by Close.
func (e *episode) racing() error {
	if e.idle != nil {
		e.idle.pause(true)
	}
	e.startReader()
	ctx, cancel := context.WithDeadline(context.Background(), e.deadline)
	defer cancel()
	observed := make(chan error, 1)
	go func() {
		err := e.v.WaitStalled(ctx)
		_, _, _ = e.v.Stalled(), e.v.StalledSince(), e.v.Reads()
		if errors.Is(err, pipes.ErrValveClosed) {
			err = nil
		}
		observed <- err
	}()
	scripts := make([][]call, 2+e.rng.IntN(3))
	for i := range scripts {
		for range 1 + e.rng.IntN(5) {
			scripts[i] = append(scripts[i], e.randomCall())
		}
	}
	err := e.run(scripts)
	e.v.Close()
	if e.idle != nil {
		e.idle.pause(false) // a read in flight at Close ends when bytes come
	}
	if err != nil {
		return err
	}
	if err := e.waitReader(); err != nil {
		return fmt.Errorf("after %v: %v", scripts, err)
	}
	select {
	case err := <-observed:
		if err != nil {
			return fmt.Errorf("WaitStalled: %v", err)
		}
	case <-ctx.Done():
		return fmt.Errorf("WaitStalled stuck at the deadline after Close; %s", e.state())
	}
	return nil
}

// stallAfterExact: with nothing racing it, StallAfter(n) lets exactly n
// bytes through and then nothing more passes.
func (e *episode) stallAfterExact() error {
	e.startReader()
	if e.rng.IntN(2) == 0 {
		// Let the reader get going first, so that a read is in flight.
		if err := e.run([][]call{{{name: "Gosched"}}}); err != nil {
			return err
		}
	}
	n := 1 + e.randomSize()
	if err := e.run([][]call{{{name: "Stall"}}}); err != nil {
		return err
	}
	before := e.v.BytesRead()
	if err := e.run([][]call{{{name: "StallAfter", n: n}}}); err != nil {
		return err
	}
	ctx, cancel := context.WithDeadline(context.Background(), e.deadline)
	defer cancel()
	if err := e.v.WaitStalled(ctx); err != nil {
		e.v.Close()
		return fmt.Errorf("WaitStalled after StallAfter(%d) from %d bytes: %v; %s", n, before, err, e.state())
	}
	after := e.v.BytesRead()
	e.v.Close()
	if err := e.waitReader(); err != nil {
		return err
	}
	if after-before != n {
		return fmt.Errorf("StallAfter(%d) let %d bytes through", n, after-before)
	}
	if got := e.got.Load(); got != after {
		return fmt.Errorf("%d bytes were read after the StallAfter(%d) stall, before Close", got-after, n)
	}
	return nil
}

// racingStalls: while bytes flow, two to four goroutines call Stall at once.
// Once all have returned, nothing more may pass before Close.
func (e *episode) racingStalls() error {
	e.startReader()
	scripts := make([][]call, 2+e.rng.IntN(3))
	for i := range scripts {
		if e.rng.IntN(2) == 0 {
			scripts[i] = append(scripts[i], call{name: "Gosched"})
		}
		scripts[i] = append(scripts[i], call{name: "Stall"})
	}
	err := e.run(scripts)
	stalledAt := e.v.BytesRead()
	e.v.Close()
	if err != nil {
		return err
	}
	if err := e.waitReader(); err != nil {
		return err
	}
	if got := e.got.Load(); got != stalledAt {
		return fmt.Errorf("%d bytes were read after %d racing Stall calls had all returned", got-stalledAt, len(scripts))
	}
	return nil
}
