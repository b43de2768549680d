package proxy

import "runtime"

// While the observer has bulk to read (the bytes tee(2) gave it, see
// splice_linux.go), it reads it on an OS thread of its own whose priority
// is lowered (Linux: thread_linux.go), and it comes back once it has read
// all of it, or once a write has been blocked for BlockEvent: stuck
// traffic has nothing to yield to, and the verdict needs the stuck
// message's head. When every core is busy, the kernel then gives the CPU
// to the forwarders, the host and the server first: it is the observer
// that falls behind and loses detail (counted, as ever), not the traffic
// that slows down for it. Where a core is to spare, the thread's priority
// takes nothing from the observer, and it keeps up. It moves as soon as
// bulk waits for it, not once it is far behind: an observer that keeps up
// at the normal priority on a machine with no spare core keeps up because
// it takes the CPU the traffic needed (measured: a stream of 1 MiB lines
// through the proxy on 2 cores went at 0.56-0.68x a bare splice relay,
// median 0.64x, with the observer keeping all but 3-21% of the detail,
// when it moved to the low thread only at three quarters of its pipe
// behind; moving at any bulk, 0.58-0.86x, median 0.74x, keeping all but
// 20-75%: six interleaved pairs, BenchmarkRelayThroughput of
// internal/benchratios, at a load average of 1.7-2.4). Small messages alone, which never go
// by splice, keep it at the normal priority, so that a record of them does
// not lag behind on a loaded machine. (Observing them on the low thread too
// was measured: with a busy core the added round trip got worse, not
// better. A thread the kernel holds back can hold, for moments, one of the
// Go runtime's processors or a lock the forwarders then wait for, such as
// their channel's.)

// lowThread is a goroutine locked to a thread of lowered priority, which
// runs the functions it is given.
type lowThread struct {
	jobs chan func()
	did  chan struct{}
	done chan struct{}
}

// newLowThread starts the thread and returns once its priority is
// lowered; nil where it cannot be. It is called before the server is
// started, and never runs on a thread that started a server (see
// thread_linux.go): the thread ends when end is called.
func newLowThread() *lowThread {
	var held []*lowThread // goroutines holding threads that started a server
	defer func() {
		for _, h := range held {
			close(h.jobs)
			<-h.done
		}
	}()
	for range maxLowTries {
		t := &lowThread{jobs: make(chan func()), did: make(chan struct{}), done: make(chan struct{})}
		got := make(chan int, 1)
		go t.serve(got)
		switch <-got {
		case lowReady:
			return t
		case lowForker:
			held = append(held, t)
		default:
			<-t.done
			return nil
		}
	}
	return nil
}

// maxLowTries bounds the threads newLowThread tries: a process running
// proxies has a handful of threads that started servers, usually.
const maxLowTries = 64

// What a try of newLowThread found.
const (
	lowNone   = iota // the priority cannot be lowered here
	lowReady         // the thread is the low thread
	lowForker        // the thread started a server: held, to try another
)

// serve is the low thread's goroutine: it reports on got what it found,
// then runs the jobs (or, on a thread that started a server, waits to be
// let go).
func (t *lowThread) serve(got chan<- int) {
	defer close(t.done)
	lowered, forker := lowerPriority()
	switch {
	case forker:
		got <- lowForker
		<-t.jobs // closed: the try is over
		runtime.UnlockOSThread()
		return
	case !lowered:
		got <- lowNone
		return
	}
	got <- lowReady
	for f := range t.jobs {
		f()
		t.did <- struct{}{}
	}
	// The goroutine ends locked to its thread: the thread ends with it.
}

// do runs f on the thread and returns when f has.
func (t *lowThread) do(f func()) {
	t.jobs <- f
	<-t.did
}

// end ends the thread and waits for it.
func (t *lowThread) end() {
	if t != nil {
		close(t.jobs)
		<-t.done
	}
}
