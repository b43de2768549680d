package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Record is a recording parsed for replay: the proxy's events as they were
// read, and what they say about the session — the frames each side sent,
// how the bytes were cut into chunks, the stalls and the cancels, with
// their times. Times are durations since the session started (the header's
// Start).
//
// After Load or Read, a Record holds only redacted content (see Redact),
// and its bytes on disk, in a temporary file, but for its events and
// short frames, so that a large record costs little memory. Its fields may
// be read freely; a Record is not safe for concurrent changes.
type Record struct {
	Header record.Header
	// Events are every event of the record, in the order they were read,
	// after redaction. The headers of rotated files after the first are
	// left out. Chunk events have no Data: ChunkBytes and Write put the
	// bytes back.
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

	// Cut says how the record ended short, when it did: its last line had
	// no newline, or its last event was damaged (a full disk, a killed
	// proxy), and it was dropped; the record is what came before it.
	Cut string

	rules  []wire.Rule       // Redact's, applied at load and save
	stores map[string]*store // by stream: the chunks' bytes, in stream order, and the long bodies
	last   *lastLine         // the long line ChunkBytes read last
}

// storeOf returns the store of stream d.
func (r *Record) storeOf(d string) *store {
	if r.stores == nil {
		r.stores = map[string]*store{}
	}
	s := r.stores[d]
	if s == nil {
		s = &store{}
		r.stores[d] = s
	}
	return s
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
	// Body is the whole line without its terminator, after redaction, if
	// it is at most 64 KiB; a longer one stays on disk, read when needed
	// (Line, Whole). Nil too when the record kept only the head: it was
	// made without -log-bodies, or the proxy's observer lost part of it.
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
	// saw: any number of messages, of unknown kinds, which a
	// replay neither expects nor calls extra.
	Gap bool

	stored ref // the body, when it is longer than Body keeps
}

// Whole reports whether the record has the frame's body.
func (f *Frame) Whole() bool { return f.Body != nil || f.stored.s != nil }

// body returns Body, or reads it from the record's store.
func (f *Frame) body() []byte {
	if f.Body != nil || f.stored.s == nil {
		return f.Body
	}
	return f.stored.bytes()
}

// Line returns the frame's line as the stream had it: its body and its
// terminator; nil if the record has not the body.
func (f *Frame) Line() []byte {
	b := f.body()
	if b == nil {
		return nil
	}
	if f.Body != nil {
		b = append([]byte(nil), b...)
	}
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
	// Since is the earliest its bytes may have been written: T, or, where
	// they waited in the pipe for the proxy to read them (record.Event's
	// Waited: the proxy was not reading, its write on blocked or a fault
	// held it), the previous read of the stream, after which they were
	// written.
	Since time.Duration
	// Parts are what the chunk held, in order, when the record kept
	// bodies: pieces of the lines of the direction's frames. Nil when the
	// record has not the chunk's bytes.
	Parts []Part

	data ref  // its bytes as the record has them, if it has them
	gap  bool // the proxy's observer lost part of them
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
	// Inferred: the record has no block event for it (the write blocked
	// for less than the proxy's -block-event), but the host acted while
	// the write was blocked, so its reads were stalled then.
	Inferred bool
	// Fault is the proxy's stop fault that made the stall, as configured
	// ("out:stop:after_bytes=1048576,for=45s"), or "": the proxy itself
	// stopped reading the server's stdout, as a host that stops reading
	// does. Seq is then the fault's end event (or its start event, if it
	// never ended), and At is exact. A write of the proxy to the host that
	// blocked during the fault is taken into its stall.
	Fault string
	// At is how many bytes of the stream the reader had taken when it
	// stopped. For a Fault, it is what the proxy had read. For a blocked
	// write it is an estimate, which the record bounds: the reader's pipe
	// (its capacity in the header, or 64 KiB when unknown) was full of what
	// it had not read when the write blocked, so it stopped about a write's
	// size around Off+N less that capacity; At is the last end of a frame
	// in that window (a reader most often stops between messages), else its
	// middle; and at least the end of the frames read whole before the
	// reader's last message the other way before the stall (it may have
	// answered them).
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
	rec := &Record{rules: o.redact, HostEOF: -1, ServerEOF: -1, Exit: -1, stores: map[string]*store{}, last: &lastLine{}}
	headers := 0
	data := map[int]ref{} // an event (its index) → its chunk's bytes
	for k, r := range rs {
		feed := &lineFeed{br: bufio.NewReaderSize(r, 64<<10)}
		err := record.Read(feed, func(e record.Event) error {
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
				return fmt.Errorf("replay: line %d: event %d (%s): %v", feed.lines, e.Seq, e.Ev, err)
			}
			if b := e.ChunkBytes(); e.Ev == record.EvChunk && b != nil {
				// On disk, not in memory: the frames' bodies are read
				// from there.
				data[len(rec.Events)] = rec.storeOf(e.Dir).put(b)
				e.Data, e.B64 = "", nil
			}
			rec.Events = append(rec.Events, e)
			return nil
		})
		if err != nil && k == len(rs)-1 && headers > 0 && feed.last() {
			// The last line of the record: what a full disk or a killed
			// proxy leaves. Play up to it.
			rec.Cut = fmt.Sprintf("the record's last line was cut or damaged, and was dropped (%v)", err)
			break
		}
		if err != nil {
			if len(rs) > 1 {
				return nil, fmt.Errorf("replay: file %d of %d: %w", k+1, len(rs), err)
			}
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	if headers == 0 {
		return nil, errors.New("replay: no record header: not a record of mcpstdio proxy")
	}
	rec.build(data)
	rec.redactAll()
	return rec, nil
}

// lineFeed hands a record's bytes on one line per Read, so that when
// record.Read fails on a line, that line is the one read last (lines
// counts them), and last says whether nothing follows it.
type lineFeed struct {
	br      *bufio.Reader
	pending []byte
	lines   int // lines begun
	midLine bool
}

func (l *lineFeed) Read(p []byte) (int, error) {
	if len(l.pending) == 0 {
		b, err := l.br.ReadSlice('\n')
		if len(b) == 0 {
			return 0, err
		}
		if !l.midLine {
			l.lines++
		}
		l.midLine = b[len(b)-1] != '\n'
		l.pending = b
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// last reports whether the line read last is the last of the stream.
func (l *lineFeed) last() bool {
	if len(l.pending) > 0 {
		return false
	}
	for l.midLine { // the rest of a long line record.Read did not take
		b, err := l.br.ReadSlice('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			l.midLine = false
		}
		if err != nil && err != bufio.ErrBufferFull {
			return true
		}
	}
	_, err := l.br.Peek(1)
	return err != nil
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
