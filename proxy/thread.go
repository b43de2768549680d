package proxy

import "runtime"

// While the observer reads bulk (the bytes tee(2) gave it, see
// splice_linux.go) and is behind by three quarters of its pipe, it works on
// an OS thread of its own whose priority is lowered (Linux:
// thread_linux.go), and it comes back once it has caught up to a quarter,
// or once a write has been blocked for BlockEvent: stuck traffic has
// nothing to yield to, and the verdict needs the stuck message's head.
// When every core is busy, the kernel then gives the CPU to the forwarders,
// the host and the server first: it is the observer that falls further
// behind and loses detail (counted, as ever), not the traffic that slows
// down for it. Where there is a core to spare it keeps up and stays at the
// normal priority; small messages alone, which never go by splice, keep it
// there, so that a record of them does not lag behind on a loaded machine.
// (Observing them there too was measured: with a busy core the added round
// trip got worse, not better. A thread the kernel holds back can hold, for
// moments, one of the Go runtime's processors or a lock the forwarders then
// wait for, such as their channel's.)
//
// Moving as soon as any bulk waits, not at three quarters, was tried and
// taken back: it sped a flood of 1 MiB lines on 2 cores (0.64x -> 0.74x a
// bare splice relay, medians of six interleaved pairs, load 1.7-2.4), but
// the observer then sat at the lowest priority through every large
// response, and a loaded machine starved it there: sessions of three
// 4 MiB tools/call responses to a host that read each 0.3 s late, at a
// load average of 8-9, lost detail in 8 of 8 sessions (2.5-7.9 of 12.6 MB
// missed, 2 to 4 of 4 responses in the record) against 1 of 8 (0.1 MB) this
// way; and a CI run lost a 300 kB response's end from the record.

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
