package page

import (
	"bytes"
	"io"
	"os"

	"github.com/mcpstdio/mcpstdio/record"
)

// tail follows a record that is still being written: each update reads the
// complete lines added since the last one into its Session. When the file
// is replaced (rotation) it starts again at the new file's beginning, the
// Session going on.
type tail struct {
	path    string
	off     int64
	info    os.FileInfo
	sess    *Session
	partial []byte
	err     error // the last reading error, shown on the page
}

// maxLiveFrames is how many frames a live Session keeps before compact
// drops the ones before the window that no open request needs.
const maxLiveFrames = 50_000

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
		t.off, t.partial = 0, nil // rotated: the new file starts with its header
	}
	t.info = fi
	if fi.Size() == t.off {
		return
	}
	b, err := io.ReadAll(io.NewSectionReader(f, t.off, min(fi.Size()-t.off, 64<<20)))
	if err != nil {
		t.err = err
		return
	}
	t.off += int64(len(b))
	b = append(t.partial, b...)
	last := bytes.LastIndexByte(b, '\n')
	t.partial = append([]byte(nil), b[last+1:]...)
	t.err = record.Read(bytes.NewReader(b[:last+1]), func(e record.Event) error { t.sess.Add(e); return nil })
	if len(t.sess.Frames) > maxLiveFrames {
		t.sess.compact(t.sess.End - window)
	}
	t.sess.Finish()
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
