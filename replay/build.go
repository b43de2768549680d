package replay

import (
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
)

// us converts the record's microseconds.
func us(t int64) time.Duration { return time.Duration(t) * time.Microsecond }

// build derives the frames, chunks, stalls and cancels from the events.
func (r *Record) build(data map[int]ref) {
	var last time.Duration
	blocks := map[string]int{} // a block event not yet ended, by dir → index in Events
	waited := map[int]int64{}  // a chunk → the bytes that waited in the pipe for its read
	for i, e := range r.Events {
		last = max(last, us(e.T))
		switch e.Ev {
		case record.EvFrame:
			f := Frame{
				Seq: e.Seq, Dir: e.Dir, T0: us(e.T0), T: us(e.T), Off: e.Off, Size: e.N, Kind: e.Kind,
				ID: e.ID, Method: e.Method, Tool: e.Tool, Token: e.Token, Code: e.Code,
				Head: []byte(e.Head), Hash: e.Hash, CRLF: e.CRLF, Unterminated: e.Unterminated, Scanned: e.Scanned, Gap: e.Gap,
			}
			if f.T0 == 0 {
				f.T0 = f.T
			}
			if !e.Gap && r.headWhole(e) {
				f.Body = []byte(e.Head)
			}
			*r.frames(e.Dir) = append(*r.frames(e.Dir), f)
		case record.EvChunk:
			r.Chunks = append(r.Chunks, Chunk{Seq: e.Seq, Dir: e.Dir, Off: e.Off, N: e.N, T: us(e.T), WT: us(e.WT), Since: us(e.T), data: data[i], gap: e.Gap})
			waited[len(r.Chunks)-1] = e.Waited
		case record.EvBlock:
			blocks[e.Dir] = i
		case record.EvUnblock:
			// One write at a time per direction: this ends its block (whose
			// Since is when the write began, a little after the read).
			delete(blocks, e.Dir)
			r.Stalls = append(r.Stalls, Stall{Seq: e.Seq, Dir: e.Dir, Since: us(e.Since), Dur: us(e.Dur), Ended: true, N: e.N})
		case record.EvCancel:
			r.Cancels = append(r.Cancels, Cancel{Seq: e.Seq, T: us(e.T), Dir: e.Dir, ID: e.ID, Method: e.Method, Tool: e.Tool, State: e.State, Reason: e.Reason})
		case record.EvEOF:
			switch e.Dir {
			case record.DirIn:
				r.HostEOF = us(e.T)
			case record.DirOut:
				r.ServerEOF = us(e.T)
			}
		case record.EvExit:
			r.Exit, r.ExitCode = us(e.T), e.Exit
		}
	}
	for _, i := range blocks {
		e := r.Events[i]
		r.Stalls = append(r.Stalls, Stall{Seq: e.Seq, Dir: e.Dir, Since: us(e.Since), Dur: last - us(e.Since), N: e.N})
	}
	r.waitedSince(waited)
	r.shortStalls()
	r.faultStalls(last)
	for _, d := range []string{record.DirIn, record.DirOut, record.DirErr} {
		r.bodies(d)
		r.delivered(d)
	}
	for i := range r.Stalls {
		if r.Stalls[i].Fault == "" {
			r.placeStall(&r.Stalls[i])
		}
	}
	r.mergeFaultStalls()
	sort.SliceStable(r.Stalls, func(i, j int) bool { return r.Stalls[i].Seq < r.Stalls[j].Seq })
}

// frames returns the frames of direction d.
func (r *Record) frames(d string) *[]Frame {
	switch d {
	case record.DirIn:
		return &r.Host
	case record.DirOut:
		return &r.Server
	}
	return &r.Stderr
}

// headWhole reports whether a frame event's head is the whole frame.
func (r *Record) headWhole(e record.Event) bool {
	if e.Redacted == 0 {
		return int64(len(e.Head)) == e.N
	}
	// Redacted: the head is of the redacted frame, whose length the event
	// does not give, cut to the budget (less a partial character) and to
	// the original length. Well short of both, it was not cut.
	return len(e.Head)+utf8.UTFMax <= min(r.Header.Head, int(e.N))
}

// delivered sets when each frame of direction d had been written on: the
// end of the write of the chunk holding its last byte.
func (r *Record) delivered(d string) {
	var chunks []Chunk
	for _, c := range r.Chunks {
		if c.Dir == d {
			chunks = append(chunks, c)
		}
	}
	sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].Off < chunks[j].Off })
	frames := *r.frames(d)
	for i := range frames {
		f := &frames[i]
		end := f.Off + f.Size // the newline, or the "\r" before it
		if f.Unterminated {
			end--
		}
		k := sort.Search(len(chunks), func(k int) bool { return chunks[k].Off+chunks[k].N > end })
		if f.CRLF && k < len(chunks) && chunks[k].Off+chunks[k].N == end+1 {
			k++ // the "\r" ends this chunk; the newline is in the next
		}
		if k < len(chunks) && chunks[k].Off <= end+1 {
			f.Delivered = chunks[k].WT
		}
	}
}

// placeStall finds a stall's blocked write and estimates where its reader
// stopped.
func (r *Record) placeStall(s *Stall) {
	var best *Chunk
	for i := range r.Chunks {
		c := &r.Chunks[i]
		if c.Dir != s.Dir || c.T > s.Since {
			continue
		}
		if best == nil || c.T > best.T || c.T == best.T && c.Off > best.Off {
			best = c
		}
	}
	if best == nil {
		return
	}
	s.Off, s.N = best.Off, best.N
	capacity := r.Header.Pipes.HostStdout
	switch s.Dir {
	case record.DirIn:
		capacity = r.Header.Pipes.ServerStdin
	case record.DirErr:
		capacity = r.Header.Pipes.HostStderr
	}
	if capacity <= 0 {
		capacity = 64 << 10
	}
	// The reader's pipe held what it had not read, up to its capacity, and
	// the write blocked inside [Off, Off+N): the reader stopped within a
	// write's size of Off+N-capacity (the kernel fills pipes by pages, so
	// give it a write more). A reader stops most often after a whole
	// message: take the last frame end in that window, else its middle.
	lo, hi := best.Off-int64(capacity)-best.N, best.Off+best.N-int64(capacity)
	s.At = max(0, best.Off+best.N/2-int64(capacity))
	for _, f := range *r.frames(s.Dir) {
		if end := frameEnd(&f); end >= lo && end <= hi {
			s.At = end
		}
	}
	// The reader had read at least what it answered before the stall: the
	// frames of the stream that were read whole before its last message
	// the other way, before the stall began.
	other := r.Host
	if s.Dir == record.DirIn {
		other = r.Server
	}
	var acted time.Duration = -1
	for _, f := range other {
		if f.T <= s.Since {
			acted = max(acted, f.T)
		}
	}
	for _, f := range *r.frames(s.Dir) {
		if f.T <= acted && !f.Unterminated {
			s.At = max(s.At, frameEnd(&f))
		}
	}
}

// frameEnd returns the stream offset just past f's terminator.
func frameEnd(f *Frame) int64 {
	end := f.Off + f.Size + 1
	if f.CRLF {
		end++
	}
	return end
}

// minBlocked is how long a write of the proxy to the host must have taken
// for a host action during it to count as taken while its reads were
// stalled: a write to a pipe with room returns in microseconds.
const minBlocked = 500 * time.Microsecond

// shortStalls adds the proxy's writes to the host that blocked for less
// than its -block-event (so the record has no block event for them) while
// the host acted: the host's pipe was full then, and what it did may
// depend on that (a cancel sent while the server was blocked writing).
func (r *Record) shortStalls() {
	acts := hostActs(r)
	for _, c := range r.Chunks {
		if c.Dir != record.DirOut || c.WT-c.T < minBlocked {
			continue
		}
		covered := false
		for _, st := range r.Stalls {
			if st.Dir == record.DirOut && st.Since <= c.WT && c.T <= st.Since+st.Dur {
				covered = true
			}
		}
		acted := false
		for _, t := range acts {
			if c.T < t && t < c.WT {
				acted = true
			}
		}
		if acted && !covered {
			r.Stalls = append(r.Stalls, Stall{Seq: c.Seq, Dir: record.DirOut, Since: c.T, Dur: c.WT - c.T, Ended: true, N: c.N, Inferred: true})
		}
	}
}

// hostActs returns the times of the recorded host's actions, in order:
// its writes (chunks of stdin) and the first bytes of its frames.
func hostActs(r *Record) []time.Duration {
	var acts []time.Duration
	for _, c := range r.Chunks {
		if c.Dir == record.DirIn {
			acts = append(acts, c.T)
		}
	}
	for _, f := range r.Host {
		acts = append(acts, f.T0)
	}
	slices.Sort(acts)
	return acts
}

// waitedSince sets Since for the chunks whose bytes waited in the pipe
// before the proxy read them (waited, by chunk): the first Waited bytes of
// such a read and, past its N, of the reads after it of the same stream
// were written after the previous read of the stream returned.
func (r *Record) waitedSince(waited map[int]int64) {
	for _, d := range []string{record.DirIn, record.DirOut, record.DirErr} {
		var prev time.Duration // when the previous read of d returned
		var left int64         // waited bytes not yet placed
		var since time.Duration
		for i := range r.Chunks {
			c := &r.Chunks[i]
			if c.Dir != d {
				continue
			}
			if w := waited[i]; w > 0 {
				left, since = w, prev
			}
			if left > 0 {
				c.Since = min(c.T, since)
				left -= c.N
			}
			prev = c.T
		}
	}
}
