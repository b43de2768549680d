package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
)

// Record is a recording parsed for replay: the proxy's events as they were
// read, and what they say about the session — the frames each side sent,
// how the bytes were cut into chunks, the stalls and the cancels, with
// their times. Times are durations since the session started (the header's
// Start).
//
// After Load or Read, a Record holds only redacted content (see Redact).
// Its fields may be read freely; a Record is not safe for concurrent
// changes.
type Record struct {
	Header record.Header
	// Events are every event of the record, in the order they were read,
	// after redaction. The headers of rotated files after the first are
	// left out.
	Events []record.Event

	Host   []Frame // what the host wrote to the server's stdin, in stream order
	Server []Frame // what the server wrote to its stdout, in stream order
	Stderr []Frame // the lines the server wrote to its stderr

	// Chunks are the reads and writes of every stream, in the order their
	// events were read (per stream, in stream order).
	Chunks []Chunk
	// Stalls are the writes that blocked: on DirOut, the host not reading
	// the server's stdout; on DirIn, the server not reading its stdin; on
	// DirErr, the host not reading stderr. In the order of their events.
	Stalls  []Stall
	Cancels []Cancel

	// HostEOF is when the host closed the server's stdin, ServerEOF when
	// the server's stdout ended, Exit when the server ended; -1 if the
	// record does not show it.
	HostEOF, ServerEOF, Exit time.Duration
	// ExitCode is the server's exit code, nil if the record does not show
	// one (it was killed, or the record ended first).
	ExitCode *int

	rules []rule // Redact's, applied at load and save
}

// Frame is one line of a stream, as a frame event of the record describes
// it, with its bytes when the record has them.
type Frame struct {
	Seq int64  // the frame event's Seq
	Dir string // record.DirIn, DirOut or DirErr
	// T0 is when its first byte was read by the proxy, T its newline;
	// Delivered is when its last byte had been written on to the other
	// side (0: never, or the record does not say).
	T0, T, Delivered time.Duration
	Off, Size        int64  // where it starts in its stream and its bytes there, without the terminator
	Kind             string // record.KindRequest, KindNotification, KindResponse, KindError, KindJunk
	ID               json.RawMessage
	Method, Tool     string
	Token            json.RawMessage // a request's progress token, or a progress notification's
	Code             int64           // an error response's code
	// Body is the whole line without its terminator, after redaction, or
	// nil when the record kept only its head: the record was made
	// without -log-bodies and the frame was longer than its head, or the
	// proxy's observer lost part of it.
	Body []byte
	Head []byte // its first bytes, after redaction
	Hash string // the proxy's checksum of the frame after redaction ("crc32c:<hex>"), when known
	// CRLF: the line ended "\r\n"; Unterminated: the stream ended before
	// its newline; Scanned: it was too long for the proxy to parse, and
	// only its top-level id and method are known.
	CRLF, Unterminated, Scanned bool
	// Gap: the proxy's observer fell behind and lost bytes here (it never
	// loses traffic, only detail; see record.EvDrop). The frame stands for
	// the bytes from the line where the loss began to the next newline it
	// saw: any number of messages, whose kinds are unknown. A replay
	// expects nothing in particular there, and does not call what comes
	// in their place extra.
	Gap bool
}

// Line returns the frame's line as the stream had it: Body and its
// terminator; nil if the record has not the body.
func (f *Frame) Line() []byte {
	if f.Body == nil {
		return nil
	}
	b := append([]byte(nil), f.Body...)
	switch {
	case f.Unterminated:
	case f.CRLF:
		b = append(b, '\r', '\n')
	default:
		b = append(b, '\n')
	}
	return b
}

// LineWith returns Line with the value at the path of object keys from
// the message root replaced by v, as a replay remaps an id ("id"), a
// cancel's request id ("params", "requestId") or a progress token; Line
// itself if there is no such value.
func (f *Frame) LineWith(v json.RawMessage, keys ...string) []byte {
	return setAt(f.Line(), v, keys...)
}

// Chunk is one read of a stream by the proxy and the write that passed it
// on: how the bytes were cut, and when.
type Chunk struct {
	Seq    int64
	Dir    string
	Off, N int64 // bytes [Off, Off+N) of the stream
	// T is when the read returned, WT when the write ended (0: it never
	// did).
	T, WT time.Duration
	// Parts are what the chunk held, in order, when the record kept
	// bodies: pieces of the lines of the direction's frames. Nil when the
	// record has not the chunk's bytes.
	Parts []Part
}

// Part is a piece of one line in a chunk: bytes [From, To) of the line of
// Frame (an index into the Record's Host, Server or Stderr, by the chunk's
// direction: the frame's Body and its terminator), or, when Frame is -1,
// Raw bytes that belong to no frame (an empty line).
type Part struct {
	Frame    int
	From, To int
	Raw      []byte
}

// Stall is a write of the proxy that blocked: its reader was not reading.
type Stall struct {
	Seq   int64  // the unblock event (or the block event, if it never ended)
	Dir   string // the stream
	Since time.Duration
	// Dur is how long the write was blocked; Ended is false when it was
	// still blocked when the record ended, and Dur then is the time from
	// Since to the record's last event.
	Dur   time.Duration
	Ended bool
	// Off and N are the blocked write's bytes of the stream.
	Off, N int64
	// At estimates how many bytes of the stream the reader had taken when
	// it stopped. The record bounds it: the reader's pipe (its capacity in
	// the header, or 64 KiB when unknown) was full of what it had not read
	// when the write blocked, so it stopped about a write's size around
	// Off+N less that capacity; At is the last end of a frame in that
	// window (a host most often stops between messages), else its middle;
	// and at least the end of the frames read whole before the reader's
	// last message the other way before the stall (it may have answered
	// them).
	At int64
}

// Cancel is a notifications/cancelled that went by, and where its request
// was then (see record.Event).
type Cancel struct {
	Seq          int64
	T            time.Duration
	Dir          string
	ID           json.RawMessage
	Method, Tool string
	State        string
	Reason       string
}

// Load reads the record at path, with its rotated files (path.N … path.1,
// oldest first) before it, as the proxy writes them (see
// record.Files).
func Load(path string, opts ...Option) (*Record, error) {
	var rs []io.Reader
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, p := range record.Files(path) {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		files = append(files, f)
		rs = append(rs, f)
	}
	rec, err := read(rs, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return rec, nil
}

// Read reads a record from r (one file; see Load for a rotated record).
func Read(r io.Reader, opts ...Option) (*Record, error) {
	return read([]io.Reader{r}, opts)
}

func read(rs []io.Reader, opts []Option) (*Record, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	rec := &Record{rules: o.redact, HostEOF: -1, ServerEOF: -1, Exit: -1}
	headers := 0
	for _, r := range rs {
		err := record.Read(r, func(e record.Event) error {
			if e.Ev == record.EvHeader {
				headers++
				if headers > 1 {
					return nil // a rotated file repeats the header
				}
				rec.Header = *e.Header
			} else if headers == 0 {
				return fmt.Errorf("replay: event %d (%s) before the record's header", e.Seq, e.Ev)
			}
			if err := check(&e); err != nil {
				return fmt.Errorf("replay: event %d (%s): %v", e.Seq, e.Ev, err)
			}
			rec.Events = append(rec.Events, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	if headers == 0 {
		return nil, errors.New("replay: no record header: not a record of mcpstdio proxy")
	}
	rec.build()
	rec.redactAll()
	return rec, nil
}

// maxOffset bounds the offsets and sizes a record may give (1 TiB): more
// is a damaged record, and would overflow the sums made of them.
const maxOffset = 1 << 40

// check rejects an event the players cannot place: a stream that is not
// one of the three, a negative or absurd time, offset or size.
func check(e *record.Event) error {
	switch e.Ev {
	case record.EvFrame, record.EvChunk, record.EvBlock, record.EvUnblock, record.EvEOF:
		if e.Dir != record.DirIn && e.Dir != record.DirOut && e.Dir != record.DirErr {
			return fmt.Errorf("stream %q is not %q, %q or %q", e.Dir, record.DirIn, record.DirOut, record.DirErr)
		}
	}
	for _, v := range []struct {
		name string
		v    int64
		max  int64
	}{
		{"t", e.T, maxOffset}, {"t0", e.T0, maxOffset}, {"wt", e.WT, maxOffset}, {"since", e.Since, maxOffset}, {"dur", e.Dur, maxOffset},
		{"off", e.Off, maxOffset}, {"n", e.N, maxOffset},
	} {
		if v.v < 0 || v.v > v.max {
			return fmt.Errorf("%s is %d, out of range", v.name, v.v)
		}
	}
	return nil
}

// us converts the record's microseconds.
func us(t int64) time.Duration { return time.Duration(t) * time.Microsecond }

// build derives the frames, chunks, stalls and cancels from the events.
func (r *Record) build() {
	var last time.Duration
	blocks := map[string]int{} // a block event not yet ended, by dir → index in Events
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
			r.Chunks = append(r.Chunks, Chunk{Seq: e.Seq, Dir: e.Dir, Off: e.Off, N: e.N, T: us(e.T), WT: us(e.WT)})
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
	sort.SliceStable(r.Stalls, func(i, j int) bool { return r.Stalls[i].Seq < r.Stalls[j].Seq })
	for _, d := range []string{record.DirIn, record.DirOut, record.DirErr} {
		r.bodies(d)
		r.delivered(d)
	}
	for i := range r.Stalls {
		r.placeStall(&r.Stalls[i])
	}
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

// bodies recovers the frames' bytes of direction d from the chunks' data,
// when the record kept bodies, and notes which lines each chunk held. A
// chunk's data is its bytes after the proxy's redaction, so its length may
// differ from N; but it holds the same newlines as the bytes read, so
// lines are found by counting them: every line but an empty one is a
// frame. A line that is not whole in the data (the observer lost a chunk)
// gets no body; a body whose hash is not the frame event's is dropped.
func (r *Record) bodies(d string) {
	if !r.Header.Bodies {
		return
	}
	frames := *r.frames(d)
	var evs []*record.Event
	for i := range r.Events {
		if e := &r.Events[i]; e.Ev == record.EvChunk && e.Dir == d {
			evs = append(evs, e)
		}
	}
	var chunks []*Chunk
	for i := range r.Chunks {
		if r.Chunks[i].Dir == d {
			chunks = append(chunks, &r.Chunks[i])
		}
	}
	// last returns the stream offset of frame i's last byte.
	last := func(i int) int64 {
		f := frames[i]
		switch {
		case f.Unterminated:
			return f.Off + f.Size - 1
		case f.CRLF:
			return f.Off + f.Size + 1
		}
		return f.Off + f.Size
	}
	type pend struct {
		c    *Chunk
		from int
	}
	var (
		cur     []byte // the line so far
		curOK   = true // cur is the line from its start
		pending []pend // the chunks holding parts of cur
		fi      int    // the frame of the next line
	)
	endLine := func(f int) {
		if f >= 0 && curOK {
			body := cur
			if !frames[f].Unterminated {
				body = bytes.TrimSuffix(body, []byte("\n"))
				if frames[f].CRLF {
					body = bytes.TrimSuffix(body, []byte("\r"))
				}
			}
			if frames[f].Hash == "" || frames[f].Hash == frameHash(body) {
				frames[f].Body = slices.Clone(body)
			}
		}
		for k, p := range pending {
			to := len(cur)
			if k+1 < len(pending) {
				to = pending[k+1].from
			}
			if f < 0 {
				p.c.Parts = append(p.c.Parts, Part{Frame: -1, Raw: slices.Clone(cur[p.from:to])})
			} else {
				p.c.Parts = append(p.c.Parts, Part{Frame: f, From: p.from, To: to})
			}
		}
		cur, pending, curOK = cur[:0], pending[:0], true
	}
	for k, c := range chunks {
		data := evs[k].ChunkBytes()
		if c.N > 0 && (data == nil || evs[k].Gap) {
			// Unknown bytes: the line in progress and the lines ending in
			// this chunk have no body here.
			end := c.Off + c.N
			if len(pending) > 0 && fi < len(frames) && last(fi) >= end {
				curOK = false // the line goes on past this chunk
				continue
			}
			if len(pending) > 0 && fi < len(frames) {
				curOK = false
				endLine(fi)
				fi++
			}
			for fi < len(frames) && last(fi) < end {
				fi++
			}
			cur, pending = cur[:0], pending[:0]
			// The next line starts with the next chunk only if a frame
			// ended right at the end of this one.
			curOK = fi > 0 && last(fi-1) == end-1
			continue
		}
		c.Parts = []Part{}
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			seg := data
			if i >= 0 {
				seg = data[:i+1]
			}
			pending = append(pending, pend{c, len(cur)})
			cur = append(cur, seg...)
			data = data[len(seg):]
			if i < 0 {
				break
			}
			if curOK && len(cur) == 1 || fi >= len(frames) {
				endLine(-1) // an empty line, or more lines than frames
				continue
			}
			endLine(fi)
			fi++
		}
	}
	if len(cur) > 0 && fi < len(frames) && frames[fi].Unterminated {
		endLine(fi)
	}
}

// castagnoli is the CRC-32C table of the proxy's frame checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameHash returns b's checksum as the proxy writes it in a frame event:
// "crc32c:<8 hex digits>".
func frameHash(b []byte) string {
	return fmt.Sprintf("crc32c:%08x", crc32.Checksum(b, castagnoli))
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

// ChunkBytes returns the bytes of chunk c as the record has them, each
// frame's line first passed through line (nil keeps them as recorded):
// line returns the bytes to use in place of the line (Body and terminator)
// of f, the i-th frame of c's direction, or nil to leave the frame out. A part of a line that line
// changed is placed where it was in the recorded line, with the change in
// the part that held it. ok is false when the record has not the chunk's
// bytes, or has not the body of a frame in it: those frames are left out.
func (r *Record) ChunkBytes(c *Chunk, line func(i int, f *Frame) []byte) (b []byte, ok bool) {
	if c.Parts == nil {
		return nil, c.N == 0
	}
	frames := *r.frames(c.Dir)
	ok = true
	for _, p := range c.Parts {
		if p.Frame < 0 {
			b = append(b, p.Raw...)
			continue
		}
		f := &frames[p.Frame]
		old := f.Line()
		if old == nil {
			ok = false
			continue
		}
		l := old
		if line != nil {
			if l = line(p.Frame, f); l == nil {
				continue
			}
		}
		from, to := p.From, p.To
		if !bytes.Equal(l, old) {
			from, to = mapOffset(old, l, from), mapOffset(old, l, to)
			if p.To == len(old) {
				to = len(l)
			}
		}
		b = append(b, l[min(from, len(l)):min(to, len(l))]...)
	}
	return b, ok
}
