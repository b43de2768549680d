//go:build linux

package proxy

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLowThread: the low thread runs what it is given on one thread, not
// the caller's, at the observer's nice value, and ends when told.
func TestLowThread(t *testing.T) {
	low := newLowThread()
	if low == nil {
		t.Fatal("newLowThread() = nil on Linux")
	}
	var tids [2]int
	var nice int
	var err error
	for i := range tids {
		low.do(func() {
			tids[i] = unix.Gettid()
			// getpriority returns 20 - nice for a thread id.
			var p int
			p, err = unix.Getpriority(unix.PRIO_PROCESS, tids[i])
			nice = 20 - p
		})
	}
	low.end()
	if err != nil {
		t.Fatal(err)
	}
	if tids[0] != tids[1] {
		t.Errorf("the low thread's jobs ran on threads %d and %d, want one", tids[0], tids[1])
	}
	if nice != observerNice {
		t.Errorf("the low thread's nice value is %d, want %d", nice, observerNice)
	}
}

// TestMoveNow: the observer moves to the low thread when a direction's
// bulk is three quarters of its pipe behind, and back at a quarter.
func TestMoveNow(t *testing.T) {
	o := &observer{low: &lowThread{}}
	sp := &splicer{obsCap: 1 << 20}
	for d := range o.dirs {
		o.dirs[d] = &dirObs{}
	}
	o.dirs[dOut].fw = &forwarder{sp: sp}
	o.dirs[dIn].fw = &forwarder{} // copies: no splicer
	for _, c := range []struct {
		low    bool
		queued int64
		want   bool
	}{
		{false, 0, false},
		{false, 3<<18 - 1, false},
		{false, 3 << 18, true},
		{true, 3 << 18, false},
		{true, 1<<18 + 1, false},
		{true, 1 << 18, true},
		{true, 0, true},
	} {
		sp.queued.Store(c.queued)
		if got := o.moveNow(&obsLoop{low: c.low}); got != c.want {
			t.Errorf("on the low thread %v, %d bytes behind: moveNow() = %v, want %v", c.low, c.queued, got, c.want)
		}
	}
	// A write blocked for BlockEvent: no traffic to yield to, so the
	// observer moves back however far behind it is, and does not leave.
	o.start, o.cfg.BlockEvent = time.Now().Add(-time.Second), 100*time.Millisecond
	o.dirs[dOut].fw.writeStart.Store(1) // began at o.start: blocked for a second
	sp.queued.Store(1 << 20)
	if !o.moveNow(&obsLoop{low: true}) {
		t.Error("on the low thread, far behind, a write blocked for 1s: moveNow() = false, want true (back to the normal priority)")
	}
	if o.moveNow(&obsLoop{}) {
		t.Error("at the normal priority, far behind, a write blocked for 1s: moveNow() = true, want false")
	}
	o.dirs[dOut].fw.writeStart.Store(0)
	o.low = nil
	if o.moveNow(&obsLoop{}) {
		t.Error("with no low thread, moveNow() = true")
	}
}

// TestLowThreadNotAForker: the low thread is never a thread that started a
// server (its end would fire the server's Pdeathsig), even when every
// thread the process has now did.
func TestLowThreadNotAForker(t *testing.T) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	marked := map[int]bool{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if _, loaded := forkers.LoadOrStore(tid, struct{}{}); !loaded {
			marked[tid] = true
		}
	}
	defer func() {
		for tid := range marked {
			forkers.Delete(tid)
		}
	}()
	low := newLowThread()
	if low == nil {
		t.Fatalf("newLowThread() = nil with %d threads marked as forkers, want a new thread", len(marked))
	}
	var tid int
	low.do(func() { tid = unix.Gettid() })
	low.end()
	if _, forked := forkers.Load(tid); forked {
		t.Errorf("the low thread %d is one that started a server", tid)
	}
}

// TestFinishOnNormalPriority: asked to finish on the low thread, the
// observer moves back first (Wait must not wait for a thread the kernel
// holds back); on the normal thread it finishes where it is.
func TestFinishOnNormalPriority(t *testing.T) {
	o := &observer{}
	l := &obsLoop{low: true}
	reply := make(chan *Result, 1)
	if !o.finishOn(l, reply) || l.finish != reply || len(reply) != 0 {
		t.Errorf("on the low thread: finishOn() did not move to finish (finish %v, %d replies)", l.finish, len(reply))
	}
}
