package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// faultSet holds the faults of a proxy.
type faultSet struct {
	all []*faultState
	// release is closed when the faults must let go of the server, for
	// releaseWhy (see sessionend.go).
	release    chan struct{}
	releaseWhy string
}

// faultState is one fault while the proxy runs.
type faultState struct {
	record.Fault
	idx    int
	fired  bool
	ended  bool
	until  time.Time // a timed stop ends then; zero: until the end
	left   int       // drop/duplicate frames left (count); -1: unlimited
	method string    // the method it acts on (drop/duplicate/withhold-cancel)
}

func newFaultSet(fs []record.Fault) (*faultSet, error) {
	s := &faultSet{release: make(chan struct{})}
	for i, f := range fs {
		if err := checkFault(f); err != nil {
			return nil, err
		}
		st := &faultState{Fault: f, idx: i, left: -1, method: f.Method}
		if f.Count > 0 {
			st.left = f.Count
		}
		if f.Kind == "withhold-cancel" {
			st.method = wire.MethodCancelled
		}
		s.all = append(s.all, st)
	}
	return s, nil
}

// forDir returns the faults acting on direction d, nil if none do.
func (s *faultSet) forDir(d dirIndex, fw *forwarder) *dirFaults {
	var mine []*faultState
	for _, f := range s.all {
		if f.Dir == dirNames[d] && !f.processWide() {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	df := &dirFaults{fw: fw, p: fw.p, faults: mine}
	for _, f := range mine {
		if f.method != "" || f.AfterMethod != "" {
			df.framed = true
		}
	}
	if df.framed {
		df.sc = wire.NewScanner(func(e wire.Envelope) {
			df.endMethod = ""
			if len(e.Method) > 0 {
				_ = json.Unmarshal(e.Method, &df.endMethod)
			}
		})
	}
	return df
}

// processWide reports whether f acts on the server process at a time
// rather than on a direction's bytes.
func (f *faultState) processWide() bool {
	return f.Kind == "sigstop" && f.AfterBytes == 0 && f.AfterMethod == ""
}

// dirFaults applies the faults of one direction inside its forwarder. Only
// the forwarder's goroutine uses it. A nil *dirFaults forwards faithfully.
type dirFaults struct {
	fw     *forwarder
	p      *Proxy
	faults []*faultState

	stopped   *faultState // the stop in effect
	shut      bool        // the destination was closed by a fault
	framed    bool        // frame boundaries are needed
	sc        *wire.Scanner
	inFrame   bool
	decided   bool
	dropping  bool
	dup       *faultState // the frame is being duplicated
	held      []byte
	endMethod string
	chunkT    time.Time // when the chunk being delivered was read
	paced     int64     // bytes written under a bandwidth fault
	paceT0    time.Time
	unpaced   bool // the pacing faults have let go (see sessionend.go)
}

// holdLimit is how much of a frame the proxy holds while it waits for the
// frame's method (drop, duplicate): a frame whose method is not within it
// is forwarded as it is, and the fault says so.
const holdLimit = 1 << 20

func (df *dirFaults) record(f *faultState, text string) {
	df.p.note(time.Now(), record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: text})
}

// gate returns when the source may be read: no stop is in effect. It
// fires time-triggered faults. It returns false if the proxy is stopping.
func (df *dirFaults) gate() bool {
	if df == nil {
		return true
	}
	now := time.Now()
	for _, f := range df.faults {
		if !f.fired && f.After > 0 && f.AfterBytes == 0 && f.AfterMethod == "" && now.Sub(df.p.start) >= time.Duration(f.After) {
			df.fire(f)
		} else if !f.fired && f.After == 0 && f.AfterBytes == 0 && f.AfterMethod == "" && f.Kind != "truncate" {
			df.fire(f)
		}
	}
	return df.waitStop()
}

// waitStop blocks while a stop is in effect; false if the proxy is
// stopping or interrupted this direction (the server exited ExitGrace ago).
// A stop ends when its time is up, or with the session (see sessionend.go).
func (df *dirFaults) waitStop() bool {
	for df.stopped != nil {
		f := df.stopped
		var until <-chan time.Time
		if !f.until.IsZero() {
			t := time.NewTimer(time.Until(f.until))
			defer t.Stop()
			until = t.C
		}
		text := "reading " + srcNames[dirOf(f.Dir)] + " again"
		select {
		case <-df.p.stop:
			df.endStop()
			return false
		case <-df.fw.halt:
			df.endStop()
			return false
		case <-until:
		case <-df.p.faults.release:
			text += ": " + df.p.faults.releaseWhy
		case <-df.fw.hostGone:
			text += ": " + hostGoneText(df.fw.d)
		}
		df.stopped = nil
		f.ended = true
		df.endStop()
		df.record(f, text)
	}
	select {
	case <-df.p.stop:
		return false
	case <-df.fw.halt:
		return false
	default:
		return true
	}
}

// sleep waits d for a pacing fault; false if the proxy is stopping or
// interrupted this direction (the server exited ExitGrace ago), so that a
// slow pace never keeps the proxy alive past its end. When the faults let
// go of the server, or the host closed the destination, the pacing faults
// end, and sleep returns true at once (see sessionend.go).
func (df *dirFaults) sleep(d time.Duration) bool {
	if df.unpaced || d <= 0 {
		return sleepUnless(0, df.p.stop, df.fw.halt)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-df.p.stop:
		return false
	case <-df.fw.halt:
		return false
	case <-t.C:
	case <-df.p.faults.release:
		df.unpace(df.p.faults.releaseWhy)
	case <-df.fw.hostGone:
		df.unpace(hostGoneText(df.fw.d))
	}
	return true
}

// unpace ends the pacing faults of the direction, for the reason why.
func (df *dirFaults) unpace(why string) {
	df.unpaced = true
	for _, f := range df.faults {
		switch f.Kind {
		case "latency", "slice", "bandwidth":
			if f.fired && !f.ended {
				f.ended = true
				df.record(f, "forwarding at full speed: "+why)
			}
		}
	}
}

// hostGoneText says why a fault of direction d let go when the host closed
// its end of the destination.
func hostGoneText(d dirIndex) string {
	return "the host closed its end of the proxy's " + streamNames[d] + ": no one will read what the fault held, and the server finds the stream closed, as without the proxy"
}

// endPace ends a pacing fault's hold on the direction, unless a stop
// fault has taken over meanwhile.
func (df *dirFaults) endPace() {
	if df.stopped == nil {
		df.endStop()
	}
}

// endStop adds the time a stop held the source to the forwarder's count.
func (df *dirFaults) endStop() {
	if since := df.fw.stopped.Swap(0); since != 0 {
		df.fw.held.Add(time.Now().UnixNano() - since)
	}
}

func dirOf(name string) dirIndex {
	for i, n := range dirNames {
		if n == name {
			return dirIndex(i)
		}
	}
	return dIn
}

// fire starts fault f.
func (df *dirFaults) fire(f *faultState) {
	if f.fired {
		return
	}
	f.fired = true
	src := srcNames[dirOf(f.Dir)]
	switch f.Kind {
	case "stop":
		df.stopped = f
		name := f.Fault.String()
		df.fw.stopName.Store(&name)
		now := time.Now() // the stop's start, as recorded and as timed
		df.fw.stopped.Store(now.UnixNano())
		text := "stopped reading " + src + " until the end of the session"
		if f.For > 0 {
			f.until = now.Add(time.Duration(f.For))
			text = fmt.Sprintf("stopped reading %s for %v", src, time.Duration(f.For))
		}
		df.p.note(now, record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: text})
	case "close", "truncate":
		df.shut = true
		df.p.sigMu.Lock() // the exit the close causes is noted after it (see sourceEnded)
		at := time.Now()  // before the close: what it causes comes after
		err := df.fw.closeDst()
		text := "closed " + dstNames[dirOf(f.Dir)] + "; discarding the rest of " + src
		if err != nil {
			text = "could not close " + dstNames[dirOf(f.Dir)] + " (" + err.Error() + "); discarding the rest of " + src
		}
		df.p.note(at, record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: text})
		df.p.sigMu.Unlock()
	case "sigstop":
		df.p.wg.Add(1)
		go func() { // bounded by For and the proxy's stop
			defer df.p.wg.Done()
			df.p.sigstop(f)
		}()
	default:
		df.record(f, "in effect")
	}
}

// readLimit cuts a read at the next byte-count trigger.
func (df *dirFaults) readLimit(off int64, n int) int {
	if df == nil {
		return n
	}
	for _, f := range df.faults {
		if !f.fired && f.AfterBytes > 0 && int64(f.AfterBytes) > off {
			n = int(min(int64(n), int64(f.AfterBytes)-off))
		}
	}
	return n
}

// deliver writes a chunk read at t, applying the faults. off is the
// chunk's source offset.
func (df *dirFaults) deliver(off int64, b []byte, t time.Time) error {
	df.chunkT = t
	var err error
	if df.framed {
		err = df.frames(b)
	} else {
		err = df.write(b)
	}
	if err != nil {
		return err
	}
	end := off + int64(len(b))
	for _, f := range df.faults {
		if !f.fired && f.AfterBytes > 0 && end >= int64(f.AfterBytes) {
			df.fire(f)
		}
	}
	return nil
}

// frames walks the chunk's frames for the frame-level faults.
func (df *dirFaults) frames(b []byte) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i+1]
		}
		b = b[len(seg):]
		nl := i >= 0
		if !df.inFrame {
			df.inFrame, df.decided, df.dropping, df.dup = true, !df.decides(), false, nil
			df.held = df.held[:0]
		}
		df.sc.Write(seg)
		switch {
		case !df.decided:
			df.held = append(df.held, seg...)
			method, known := df.endMethod, nl
			if !nl {
				if m := df.sc.Current().Method; len(m) > 0 {
					_ = json.Unmarshal(m, &method)
					known = true
				}
			}
			if known || len(df.held) > holdLimit {
				if err := df.decide(method, known); err != nil {
					return err
				}
			}
		case df.dropping:
		default:
			if err := df.write(seg); err != nil {
				return err
			}
			if df.dup != nil {
				if len(df.held)+len(seg) <= holdLimit {
					df.held = append(df.held, seg...)
				} else {
					df.record(df.dup, "frame over 1 MiB: not duplicated")
					df.dup = nil
				}
			}
		}
		if !nl {
			continue
		}
		if df.dup != nil && df.decided {
			if err := df.write(df.held); err != nil {
				return err
			}
		}
		df.inFrame = false
		method := df.endMethod
		for _, f := range df.faults {
			if !f.fired && f.AfterMethod != "" && f.AfterMethod == method {
				df.fire(f)
			}
		}
		if df.stopped != nil && len(b) > 0 {
			// Stop right after this frame: hold the rest of the chunk.
			if !df.waitStop() {
				return errClosed
			}
		}
	}
	return nil
}

// decides reports whether a frame must be held until its method is known.
func (df *dirFaults) decides() bool {
	for _, f := range df.faults {
		if f.method != "" && f.left != 0 && (f.fired || f.AfterBytes == 0 && f.AfterMethod == "" && f.After == 0) {
			return true
		}
	}
	return false
}

// decide applies drop or duplicate to the frame held so far.
func (df *dirFaults) decide(method string, known bool) error {
	df.decided = true
	for _, f := range df.faults {
		if f.method == "" || !f.fired || f.left == 0 {
			continue
		}
		if !known {
			df.record(f, "a frame's method was not within its first 1 MiB: forwarded as it is")
			break
		}
		if f.method != method {
			continue
		}
		if f.left > 0 {
			f.left--
		}
		switch f.Kind {
		case "drop", "withhold-cancel":
			df.dropping = true
			df.record(f, "dropped a "+method+" frame")
			return nil
		case "duplicate":
			df.dup = f
			df.record(f, "duplicated a "+method+" frame")
		}
		break
	}
	return df.write(df.held)
}

// write writes b on with the pacing faults (latency, slice, bandwidth).
// While a pacing fault holds the chunk, the direction counts as held by
// that fault (the fault-holding verdict and Metrics.Held*US), as under a
// stop: the source is not read meanwhile.
func (df *dirFaults) write(b []byte) error {
	if df.shut {
		return nil // discarded
	}
	piece := len(b)
	var delay time.Duration
	for _, f := range df.faults {
		if !f.fired || f.ended {
			continue
		}
		switch f.Kind {
		case "latency", "slice", "bandwidth":
			if df.stopped == nil && df.fw.stopped.Load() == 0 {
				name := f.Fault.String()
				df.fw.stopName.Store(&name)
				df.fw.stopped.Store(time.Now().UnixNano())
				defer df.endPace()
			}
		}
		switch f.Kind {
		case "latency":
			if !df.sleep(time.Until(df.chunkT.Add(time.Duration(f.Delay)))) {
				return errClosed
			}
		case "slice":
			piece = min(piece, max(int(f.Size), 1))
			delay = time.Duration(f.Delay)
		case "bandwidth":
			piece = min(piece, max(int(f.Rate)/20, 1))
			if df.paceT0.IsZero() {
				df.paceT0 = time.Now()
			}
		}
	}
	for len(b) > 0 {
		n := min(piece, len(b))
		if df.unpaced {
			n = len(b)
		}
		if err := df.fw.write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		for _, f := range df.faults {
			if f.Kind == "bandwidth" && f.fired && f.Rate > 0 {
				df.paced += int64(n)
				due := df.paceT0.Add(time.Duration(float64(df.paced) / float64(f.Rate) * float64(time.Second)))
				if !df.sleep(time.Until(due)) {
					return errClosed
				}
			}
		}
		if len(b) > 0 && delay > 0 && !df.sleep(delay) {
			return errClosed
		}
	}
	return nil
}
