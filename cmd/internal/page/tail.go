package page

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
)

// tail follows a record that is still being written: each update reads the
// complete lines added since the last one into its Session. When the file
// is replaced (rotation) it starts again at the new file's beginning, the
// Session going on. It holds no line between updates: a line not yet
// ended is read again the next time, and one over record.MaxLine is
// skipped to its newline, as record.Read skips it, and named in err.
type tail struct {
	path   string
	off    int64 // where the next update reads: the start of a line, or within one being skipped
	info   os.FileInfo
	sess   *Session
	header []byte // the file's first line, given to record.Read before each update's lines
	skip   int64  // bytes so far of a line over record.MaxLine being skipped, 0 if none
	gap    error  // the first line skipped
	err    error  // the last reading error, shown on the page
	// card is what the page showed of the record when its proxy was
	// stale, cardInfo the file then, cardPID its proxy's pid and
	// cardState whether that proxy ran; the Session is let go meanwhile.
	card      *LiveProxy
	cardInfo  os.FileInfo
	cardPID   int
	cardState ProxyState
}

// maxLiveFrames is how many frames a live Session keeps before compact
// drops the ones before the window that no open request needs.
const maxLiveFrames = 50_000

// maxTailRead is the most bytes one update reads.
const maxTailRead = 64 << 20

// tailChunk is the most bytes of a read an update scans for line ends.
const tailChunk = 256 << 10

func newTail(path string) *tail { return &tail{path: path, sess: New()} }

// update reads what was added to the record. It only reads.
func (t *tail) update(window int64) {
	f, err := os.Open(t.path)
	if err != nil {
		t.err = err
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.err = err
		return
	}
	if t.info != nil && (!os.SameFile(t.info, fi) || fi.Size() < t.off) {
		t.off, t.header, t.skip = 0, nil, 0 // rotated: the new file starts with its header
	}
	t.info = fi
	if fi.Size() == t.off {
		return
	}
	// The section is scanned a chunk at a time for line ends: a line over
	// record.MaxLine is skipped without being held, and only the complete
	// lines before it are read, into a buffer of their size.
	end := t.off + min(fi.Size()-t.off, maxTailRead)
	chunk := make([]byte, min(tailChunk, end-t.off))
	from := t.off      // the first complete line not yet read
	lineStart := t.off // the start of the line being scanned
	for pos := t.off; pos < end; {
		n, rerr := f.ReadAt(chunk[:min(int64(len(chunk)), end-pos)], pos)
		if n == 0 {
			t.err = cmp.Or(rerr, io.ErrUnexpectedEOF)
			return
		}
		c := chunk[:n]
		if t.skip > 0 {
			i := bytes.IndexByte(c, '\n')
			if i < 0 {
				t.skip += int64(n)
				pos += int64(n)
				t.off, from, lineStart = pos, pos, pos
				continue
			}
			if t.gap == nil {
				t.gap = fmt.Errorf("a line of %d bytes at offset %d, over the %d-byte limit of a record line: skipped", t.skip+int64(i), t.off-t.skip, record.MaxLine)
			}
			pos += int64(i) + 1
			t.off, from, lineStart = pos, pos, pos
			t.skip = 0
			continue
		}
		i := bytes.IndexByte(c, '\n')
		if i < 0 && pos+int64(n)-lineStart <= record.MaxLine || i >= 0 && pos+int64(i)-lineStart <= record.MaxLine {
			if j := bytes.LastIndexByte(c, '\n'); j >= 0 {
				lineStart = pos + int64(j) + 1
			}
			pos += int64(n)
			continue
		}
		// The line at lineStart is over record.MaxLine: read the lines
		// before it, then skip it from here.
		if err = t.read(f, from, lineStart); err != nil {
			break
		}
		t.skip = pos - lineStart
		t.off, from = pos, pos
	}
	if err == nil && t.skip == 0 {
		err = t.read(f, from, lineStart)
	}
	t.err = cmp.Or(err, t.gap)
	if len(t.sess.Frames) > maxLiveFrames {
		t.sess.compact(t.sess.End - window)
	}
	t.sess.Finish()
}

// read reads the complete lines in [from, to) of f into the Session, the
// file's header line given to record.Read before them, and moves t.off to
// to. The first line read becomes the header if there is none.
func (t *tail) read(f *os.File, from, to int64) error {
	if to <= from {
		return nil
	}
	b := make([]byte, to-from)
	if _, err := f.ReadAt(b, from); err != nil {
		return err
	}
	t.off = to
	r, skipHeader := io.Reader(bytes.NewReader(b)), t.header != nil
	if skipHeader {
		r = io.MultiReader(bytes.NewReader(t.header), r)
	} else if h := b[:bytes.IndexByte(b, '\n')+1]; len(h) <= record.MaxLine+1 {
		t.header = bytes.Clone(h)
	}
	err := record.Read(r, func(e record.Event) error {
		if skipHeader {
			skipHeader = false
			return nil
		}
		t.sess.Add(e)
		return nil
	})
	if t.gap == nil && errors.As(err, new(*pipes.FrameTooLargeError)) {
		t.gap = err
	}
	return err
}

// compact drops what ended before cutoff (µs): frames no request left
// needs, finished requests, ended blocks, marks. Lost counts stay.
func (s *Session) compact(cutoff int64) {
	keepF := make([]bool, len(s.Frames))
	for i, f := range s.Frames {
		keepF[i] = f.T >= cutoff
	}
	var reqs []Request
	for _, r := range s.Requests {
		if r.State == "delivered" && spanEnd(r, s.End) < cutoff {
			continue
		}
		keepF[r.Frame] = true
		if r.Response >= 0 {
			keepF[r.Response] = true
		}
		reqs = append(reqs, r)
	}
	remap := make([]int, len(s.Frames))
	var frames []Frame
	for i, f := range s.Frames {
		remap[i] = -1
		if keepF[i] {
			remap[i] = len(frames)
			frames = append(frames, f)
		}
	}
	s.open, s.last = map[string]int{}, map[string]int{}
	s.tokens = map[string]int{}
	for i := range reqs {
		r := &reqs[i]
		s.last[key(r.Dir, r.ID)] = i
		r.Frame = remap[r.Frame]
		if r.Response >= 0 {
			r.Response = remap[r.Response]
		} else {
			s.open[key(r.Dir, r.ID)] = i
		}
	}
	s.Frames, s.Requests = frames, reqs
	var blocks []Span
	s.blockAt, s.stall = map[string]int{}, map[string]int{}
	for _, b := range s.Blocks {
		if b.End > 0 && b.End < cutoff {
			continue
		}
		if b.End == 0 {
			if b.Kind == "block" {
				s.blockAt[b.Dir] = len(blocks)
			} else {
				s.stall[b.Dir+" "+b.Kind] = len(blocks)
			}
		}
		blocks = append(blocks, b)
	}
	s.Blocks = blocks
	var marks []Mark
	for _, m := range s.Marks {
		if m.T >= cutoff {
			marks = append(marks, m)
		}
	}
	s.Marks = marks
	for d := range s.chunks {
		c := s.chunks[d]
		i := 0
		for i < len(c) && c[i].wt != 0 && c[i].wt < cutoff {
			i++
		}
		s.chunks[d] = append([]chunk(nil), c[i:]...)
	}
}
