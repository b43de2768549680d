package pipes_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpstdio/mcpstdio/pipes"
)

// item is one result of Framer.Next in a table: a frame, or an error kind.
type item struct {
	Frame    string
	TooLarge int64 // Size of a *FrameTooLargeError
	Head     string
	Lost     int64 // Lost of a *TruncatedFrameError
}

// collect runs Next until io.EOF or a terminal error and records each result.
func collect(t *testing.T, f *pipes.Framer) []item {
	t.Helper()
	var got []item
	for range 100000 {
		frame, err := f.Next()
		var big *pipes.FrameTooLargeError
		var trunc *pipes.TruncatedFrameError
		switch {
		case err == nil:
			got = append(got, item{Frame: string(frame)})
		case errors.As(err, &big):
			got = append(got, item{TooLarge: big.Size, Head: string(big.Head)})
		case errors.As(err, &trunc):
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("TruncatedFrameError does not wrap io.ErrUnexpectedEOF: %v", err)
			}
			return append(got, item{Lost: trunc.Lost, Head: string(trunc.Head)})
		case err == io.EOF:
			return got
		default:
			t.Fatalf("Next: unexpected error %v", err)
		}
	}
	t.Fatal("Next never reached the end of input")
	return nil
}

func TestFramer(t *testing.T) {
	const limit = 10
	big8 := strings.Repeat("x", 8<<20)
	mib := strings.Repeat("m", 1<<20)
	tests := []struct {
		name  string
		limit int
		in    string
		want  []item
	}{
		{"one frame", limit, "{\"a\":1}\n", []item{{Frame: `{"a":1}`}}},
		{"many frames in one read", limit, "a\nbb\nccc\n", []item{{Frame: "a"}, {Frame: "bb"}, {Frame: "ccc"}}},
		{"crlf", limit, "a\r\nbb\r\n", []item{{Frame: "a"}, {Frame: "bb"}}},
		{"only the last cr is stripped", limit, "a\r\r\n", []item{{Frame: "a\r"}}},
		{"cr inside a frame is kept", limit, "a\rb\n", []item{{Frame: "a\rb"}}},
		{"empty lines skipped", limit, "\n\r\na\n\n", []item{{Frame: "a"}}},
		{"multibyte utf-8", limit, "héllo→\n", []item{{Frame: "héllo→"}}},
		{"quotes and escapes", 64, `{"t":"a\"b\\c\nd"}` + "\n", []item{{Frame: `{"t":"a\"b\\c\nd"}`}}},
		{"nul bytes", limit, "a\x00b\n", []item{{Frame: "a\x00b"}}},
		{"invalid utf-8 passes as bytes", limit, "\xff\xfe\xc3\n", []item{{Frame: "\xff\xfe\xc3"}}},
		{"just under the limit", limit, strings.Repeat("u", limit-1) + "\n", []item{{Frame: strings.Repeat("u", limit-1)}}},
		{"at the limit", limit, strings.Repeat("a", limit) + "\n", []item{{Frame: strings.Repeat("a", limit)}}},
		{"at the limit with crlf", limit, strings.Repeat("a", limit) + "\r\n", []item{{Frame: strings.Repeat("a", limit)}}},
		{"just over the limit", limit, strings.Repeat("o", limit+1) + "\n", []item{{TooLarge: limit + 1, Head: strings.Repeat("o", limit+1)}}},
		{"just over the limit with crlf", limit, strings.Repeat("o", limit+1) + "\r\n", []item{{TooLarge: limit + 1, Head: strings.Repeat("o", limit+1)}}},
		{"oversized then normal (resync)", limit, strings.Repeat("z", 100) + "\nok\n", []item{{TooLarge: 100, Head: strings.Repeat("z", 100)}, {Frame: "ok"}}},
		{"multibyte counted in bytes", 5, "ééé\n", []item{{TooLarge: 6, Head: "ééé"}}},
		{"eof mid-frame", limit, "a\nbcd", []item{{Frame: "a"}, {Lost: 3, Head: "bcd"}}},
		{"eof mid oversized frame", limit, "a\n" + strings.Repeat("q", 50), []item{{Frame: "a"}, {Lost: 50, Head: strings.Repeat("q", 50)}}},
		{"8 MiB line with no newline", 1 << 20, big8, []item{{Lost: 8 << 20, Head: big8[:pipes.HeadSize]}}},
		{"8 MiB line then a frame", 1 << 20, big8 + "\nnext\n", []item{{TooLarge: 8 << 20, Head: big8[:pipes.HeadSize]}, {Frame: "next"}}},
		{"1 MiB frames read straight into the frame", 2 << 20, mib + "\n" + mib[1:] + "\r\nz\n" + mib + "\n",
			[]item{{Frame: mib}, {Frame: mib[1:]}, {Frame: "z"}, {Frame: mib}}},
		{"at the limit after direct reads", 1<<20 - 1, mib[1:] + "\r\n" + mib + "\n" + mib[1:] + "\n",
			[]item{{Frame: mib[1:]}, {TooLarge: 1 << 20, Head: mib[:pipes.HeadSize]}, {Frame: mib[1:]}}},
		{"empty input", limit, "", nil},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"data+eof": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			if rname == "one byte" && len(tt.in) > 1<<16 {
				continue // 8 MiB one byte at a time proves nothing more and is slow under -race
			}
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				f := pipes.NewFramer(mk(tt.in), tt.limit)
				got := collect(t, f)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("frames mismatch (-want +got):\n%s", diff)
				}
				checkAccounting(t, f.Stats(), int64(len(tt.in)))
			})
		}
	}
}

// checkAccounting asserts that every input byte is in exactly one counter.
func checkAccounting(t *testing.T, s pipes.FramerStats, input int64) {
	t.Helper()
	if s.Bytes != input {
		t.Errorf("Stats().Bytes = %d, want %d (all input)", s.Bytes, input)
	}
	if sum := s.FrameBytes + s.Terminators + s.Discarded + s.Pending; sum != s.Bytes {
		t.Errorf("FrameBytes %d + Terminators %d + Discarded %d + Pending %d = %d, want Bytes %d",
			s.FrameBytes, s.Terminators, s.Discarded, s.Pending, sum, s.Bytes)
	}
}

func TestFramerStats(t *testing.T) {
	in := "a\n\nbbb\r\n" + strings.Repeat("x", 20) + "\r\n\r\ncc"
	f := pipes.NewFramer(strings.NewReader(in), 5)
	collect(t, f)
	want := pipes.FramerStats{
		Bytes:       int64(len(in)),
		Frames:      2,
		FrameBytes:  4,
		Largest:     3,
		Terminators: 1 + 1 + 2 + 2 + 2,
		EmptyLines:  2,
		Oversized:   1,
		Discarded:   20 + 2,
		Truncated:   1,
	}
	if diff := cmp.Diff(want, f.Stats()); diff != "" {
		t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
	}
}

func TestFramerReadError(t *testing.T) {
	boom := errors.New("boom")
	f := pipes.NewFramer(io.MultiReader(strings.NewReader("a\nbc"), iotest.ErrReader(boom)), 10)
	if frame, err := f.Next(); err != nil || string(frame) != "a" {
		t.Fatalf("Next() = %q, %v; want \"a\", nil", frame, err)
	}
	_, err := f.Next()
	var trunc *pipes.TruncatedFrameError
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "2 bytes") {
		t.Errorf("Next() error = %v; want it to wrap the read error and say 2 bytes were lost", err)
	}
	if errors.As(err, &trunc) {
		t.Errorf("a read failure is not a clean end of input: got %T in the chain", trunc)
	}
	if _, err2 := f.Next(); err2 != err {
		t.Errorf("second Next() error = %v, want the same sticky error", err2)
	}
}

func TestFramerNoProgress(t *testing.T) {
	f := pipes.NewFramer(zeroReader{}, 10)
	if _, err := f.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("Next() over a reader that returns 0, nil forever: err = %v, want io.ErrNoProgress", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// FuzzFramer checks the invariants for any input and any limit: no panic, no
// frame over the limit or containing a newline, and every byte accounted for.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\n"), 2, uint8(0))
	f.Add([]byte(strings.Repeat("x", 300)+"\nok\n"), 10, uint8(3))
	f.Add([]byte("\r\r\n\r\n"), 1, uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, limit int, split uint8) {
		limit = 1 + (limit&0x7fffffff)%512
		fr := pipes.NewFramer(pipes.SplitReader(in, split), limit)
		var frames, frameBytes int64
		for {
			frame, err := fr.Next()
			if err == nil {
				if len(frame) == 0 || len(frame) > limit {
					t.Fatalf("frame of %d bytes with limit %d", len(frame), limit)
				}
				if bytes.IndexByte(frame, '\n') >= 0 {
					t.Fatalf("frame contains a newline: %q", frame)
				}
				frames++
				frameBytes += int64(len(frame))
				if s := fr.Stats(); s.Frames != frames || s.FrameBytes != frameBytes {
					t.Fatalf("after %d frames of %d bytes: Stats() = %+v", frames, frameBytes, s)
				}
				continue
			}
			var big *pipes.FrameTooLargeError
			if errors.As(err, &big) {
				if big.Size <= int64(limit) || len(big.Head) > pipes.HeadSize {
					t.Fatalf("bad FrameTooLargeError %+v with limit %d", big, limit)
				}
				continue
			}
			if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error %v", err)
			}
			break
		}
		s := fr.Stats()
		if s.Frames != frames || s.FrameBytes != frameBytes {
			t.Errorf("Stats frames %d/%d bytes, returned %d/%d", s.Frames, s.FrameBytes, frames, frameBytes)
		}
		if s.Pending != 0 {
			t.Errorf("Stats().Pending = %d at end of input, want 0", s.Pending)
		}
		if s.FrameBytes+s.Terminators+s.Discarded != int64(len(in)) || s.Bytes != int64(len(in)) {
			t.Errorf("accounting: frames %d + terminators %d + discarded %d != input %d (Bytes %d)",
				s.FrameBytes, s.Terminators, s.Discarded, len(in), s.Bytes)
		}
		if nl := int64(bytes.Count(in, []byte("\n"))); s.Frames+s.EmptyLines+s.Oversized != nl {
			t.Errorf("frames %d + empty %d + oversized %d != newlines %d", s.Frames, s.EmptyLines, s.Oversized, nl)
		}
	})
}

// TestFramerStatsConcurrent takes snapshots while Next runs on a real pipe:
// each one keeps the accounting invariant with no negative counter, no
// counter goes down, every frame returned before Next last called Read is
// in it, and it counts no frame Next has not returned or is not returning.
// At the end of the input Stats is the same from any goroutine.
func TestFramerStatsConcurrent(t *testing.T) {
	p := newPipe(t)
	const limit = 100
	var in bytes.Buffer
	for i := range 60_000 { // enough frames and "\r"s to move the packed counts into the totals several times
		switch i % 7 {
		case 0:
			in.WriteString(strings.Repeat("o", limit+1+i%300) + "\r\n") // oversized
		case 1:
			in.WriteString("\r\n") // empty
		case 2:
			in.WriteString(strings.Repeat("c", 1+i%limit) + "\r\n")
		default:
			in.WriteString(strings.Repeat("f", 1+i%limit) + "\n")
		}
	}
	in.WriteString("unfinished")
	wdone := startWriter(t, p, in.Bytes())
	var returned atomic.Int64   // frames Next has returned
	var beforeRead atomic.Int64 // returned, as of the last time Next called Read
	f := pipes.NewFramer(readFunc(func(b []byte) (int, error) {
		beforeRead.Store(returned.Load())
		return p.R.Read(b)
	}), limit)
	rdone := make(chan pipes.FramerStats, 1) // Stats at the end, from the reading goroutine
	rerr := make(chan error, 1)
	go func() {
		for {
			_, err := f.Next()
			var big *pipes.FrameTooLargeError
			switch {
			case err == nil:
				returned.Add(1)
			case errors.As(err, &big):
			case errors.Is(err, io.ErrUnexpectedEOF):
				rdone <- f.Stats()
				return
			default:
				rerr <- err
				return
			}
		}
	}()
	var prev, counts pipes.FramerStats
	for snapshots := 0; ; snapshots++ {
		done := false
		select {
		case err := <-rerr:
			t.Fatalf("Next: %v", err)
		case counts = <-rdone:
			done = true
		default:
		}
		floor := beforeRead.Load()
		s := f.Stats()
		ceiling := returned.Load() + 1 // + the frame a running Next may be returning
		if sum := s.FrameBytes + s.Terminators + s.Discarded + s.Pending; sum != s.Bytes || s.Pending < 0 {
			t.Fatalf("snapshot %d: FrameBytes %d + Terminators %d + Discarded %d + Pending %d = %d, want Bytes %d, Pending >= 0",
				snapshots, s.FrameBytes, s.Terminators, s.Discarded, s.Pending, sum, s.Bytes)
		}
		if s.Frames < floor || s.Frames > ceiling {
			t.Fatalf("snapshot %d: Frames = %d; Next had returned %d frames when it last called Read, and %d (+1 it may be returning) after Stats",
				snapshots, s.Frames, floor, ceiling-1)
		}
		for name, pair := range map[string][2]int64{
			"Bytes": {prev.Bytes, s.Bytes}, "Frames": {prev.Frames, s.Frames}, "FrameBytes": {prev.FrameBytes, s.FrameBytes},
			"Largest": {prev.Largest, s.Largest}, "Terminators": {prev.Terminators, s.Terminators}, "EmptyLines": {prev.EmptyLines, s.EmptyLines},
			"Oversized": {prev.Oversized, s.Oversized}, "Discarded": {prev.Discarded, s.Discarded}, "Truncated": {prev.Truncated, s.Truncated},
		} {
			if pair[1] < pair[0] {
				t.Fatalf("snapshot %d: %s went down from %d to %d", snapshots, name, pair[0], pair[1])
			}
		}
		prev = s
		if done {
			t.Logf("%d snapshots", snapshots)
			break
		}
	}
	wait(t, wdone, "writer")
	checkAccounting(t, prev, int64(in.Len()))
	if prev.Pending != 0 || prev.Truncated != 1 || prev.Frames != returned.Load() {
		t.Errorf("at the end: Pending %d, Truncated %d, Frames %d; want 0, 1, %d", prev.Pending, prev.Truncated, prev.Frames, returned.Load())
	}
	if diff := cmp.Diff(counts, prev); diff != "" {
		t.Errorf("at the end, Stats() differs from the reading goroutine's (-reader +other):\n%s", diff)
	}
}

// readFunc is an io.Reader made of a function.
type readFunc func([]byte) (int, error)

func (r readFunc) Read(b []byte) (int, error) { return r(b) }

// countingReader counts the reads made of it.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) { c.reads++; return c.r.Read(p) }

// TestFramerFrameStart checks that FrameStart places every frame at its
// byte in the stream: after empty lines, "\r\n" terminators and an
// oversized line, for frames whole in one read and assembled over many
// reads.
func TestFramerFrameStart(t *testing.T) {
	const limit = 10
	in := "one\n\n\r\ntwo\r\n" + strings.Repeat("x", 20) + "\nthree\nabcdefghij\r\nfour\n"
	var want []int64
	for off := 0; off < len(in); {
		n := strings.IndexByte(in[off:], '\n')
		line := strings.TrimSuffix(in[off:off+n], "\r")
		if line != "" && len(line) <= limit {
			want = append(want, int64(off))
		}
		off += n + 1
	}
	for _, c := range []struct {
		name string
		r    io.Reader
	}{{"whole", strings.NewReader(in)}, {"byte a read", iotest.OneByteReader(strings.NewReader(in))}} {
		t.Run(c.name, func(t *testing.T) {
			f := pipes.NewFramer(c.r, limit)
			var got []int64
			for {
				frame, err := f.Next()
				var tl *pipes.FrameTooLargeError
				if errors.As(err, &tl) {
					continue
				}
				if err != nil {
					break
				}
				got = append(got, f.FrameStart(frame))
			}
			if !slices.Equal(got, want) {
				t.Errorf("FrameStart of each frame = %v; want %v", got, want)
			}
		})
	}
}

// TestFramerStatsAtRead stops the reading goroutine inside each Read and
// takes a snapshot from another: it counts every frame returned before the
// read, whatever read brought them.
func TestFramerStatsAtRead(t *testing.T) {
	chunks := []string{"a\nbb\ncc", "c\ndd\nee\n", "f\r\ng\nh\n", "0123456789x\ni\nj\n", "k\nl"}
	type tally struct{ frames, bytes int64 }
	atRead := make(chan tally)
	resume := make(chan struct{})
	var mine tally // the reading goroutine's
	next := 0
	f := pipes.NewFramer(readFunc(func(b []byte) (int, error) {
		atRead <- mine
		<-resume
		if next == len(chunks) {
			return 0, io.EOF
		}
		next++
		return copy(b, chunks[next-1]), nil
	}), 10)
	end := make(chan struct{})
	go func() {
		defer close(end)
		for {
			frame, err := f.Next()
			if errors.As(err, new(*pipes.FrameTooLargeError)) {
				continue
			}
			if err != nil {
				return
			}
			mine.frames++
			mine.bytes += int64(len(frame))
		}
	}()
	for range len(chunks) + 1 {
		want := <-atRead
		s := f.Stats()
		if s.Frames != want.frames || s.FrameBytes != want.bytes {
			t.Errorf("Stats() during a read = %d frames of %d bytes; %d frames of %d bytes were returned before it", s.Frames, s.FrameBytes, want.frames, want.bytes)
		}
		if s.Bytes != s.FrameBytes+s.Terminators+s.Discarded+s.Pending {
			t.Errorf("Stats() = %+v: every byte must be accounted for", s)
		}
		resume <- struct{}{}
	}
	<-end
	if s := f.Stats(); s.Frames != 11 || s.Truncated != 1 || s.Pending != 0 {
		t.Errorf("at the end Stats() = %+v; want 11 frames and 1 truncated", s)
	}
}

// TestFramerStatsExact: after every call to Next, Stats counts exactly
// what it returned.
func TestFramerStatsExact(t *testing.T) {
	in := "one\ntwo\nthree\r\n\nfour\n" + strings.Repeat("x", 20) + "\nfive\nsix\nseven\neight"
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"a line":   func(s string) io.Reader { return &lineReader{s: s, lines: 1} },
		"2 lines":  func(s string) io.Reader { return &lineReader{s: s, lines: 2} },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			f := pipes.NewFramer(mk(in), 10)
			var frames, frameBytes int64
			for {
				frame, err := f.Next()
				if errors.As(err, new(*pipes.FrameTooLargeError)) {
					continue
				}
				if err != nil {
					break
				}
				frames++
				frameBytes += int64(len(frame))
				s := f.Stats()
				if s.Frames != frames || s.FrameBytes != frameBytes || s.Largest < int64(len(frame)) {
					t.Fatalf("after frame %q: Stats() = %+v; want %d frames of %d bytes", frame, s, frames, frameBytes)
				}
				// Stats has consumed the input up to the frame's terminator, included.
				end := f.FrameStart(frame) + int64(len(frame))
				if in[end] == '\r' {
					end++
				}
				if got := s.Bytes - s.Pending; got != end+1 {
					t.Fatalf("after frame %q: Stats() has consumed %d bytes; the frame's line ends at %d", frame, got, end+1)
				}
				checkAccounting(t, s, s.Bytes)
			}
			s := f.Stats()
			if s.Frames != 7 || s.Pending != 0 || s.Truncated != 1 {
				t.Errorf("at the end Stats() = %+v; want 7 frames and 1 truncated", s)
			}
			checkAccounting(t, s, int64(len(in)))
		})
	}
}

// lineReader reads lines whole, so many a read a time.
type lineReader struct {
	s     string
	lines int
}

func (r *lineReader) Read(b []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := 0
	for range r.lines {
		i := strings.IndexByte(r.s[n:], '\n')
		if i < 0 {
			n = len(r.s)
			break
		}
		n += i + 1
	}
	n = copy(b, r.s[:n])
	r.s = r.s[n:]
	return n, nil
}
