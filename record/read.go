package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// MaxLine is the longest line of a record Read takes, in bytes without its
// newline. The proxy writes none near it (a chunk event holds one read of
// at most a few hundred KiB, escaped; a header the server's argv). Read
// holds at most one line of it in memory: a longer line is skipped to its
// newline without being held, and told about as pipes.Framer tells of an
// oversized frame.
const MaxLine = 16 << 20

// Read reads the events of a record from r, one JSON object per
// line, calling fn for each in file order; fn returning an error stops the
// reading with that error. A record split by rotation is read by calling
// Read on each file in the order Files gives (the highest suffix, then down to
// the file without one); Seq continues across them.
//
// Input that is not a record is an error before fn is called: empty
// input, a first line that is not a header (or is longer than MaxLine), a
// header whose V is newer than SchemaVersion. Later, a line that is not an
// Event is an error that names its line number. A line longer than MaxLine
// is skipped (empty lines too); Read goes on and, at the end, returns an
// error that names the line and its size and wraps a
// *pipes.FrameTooLargeError. A last line without its newline (the proxy
// was killed while writing it) is reported as an error wrapping
// io.ErrUnexpectedEOF after the events before it.
func Read(r io.Reader, fn func(Event) error) error {
	fr := pipes.NewFramer(&firstLine{r: r}, MaxLine)
	var gap error
	for first := true; ; first = false {
		b, err := fr.Next()
		c := fr.Stats()
		line := c.Frames + c.Oversized + c.EmptyLines
		var tl *pipes.FrameTooLargeError
		switch {
		case errors.Is(err, io.EOF) && first:
			return errors.New("record: empty input: not a record")
		case errors.Is(err, io.EOF):
			return gap
		case errors.As(err, &tl) && first:
			return fmt.Errorf("record: line %d: %d bytes: not a record header", line, tl.Size)
		case errors.As(err, &tl):
			if gap == nil {
				gap = &lineTooLong{line: line, e: tl}
			}
			continue
		case errors.Is(err, errNoNewline):
			return fmt.Errorf("record: line 1: %w: not a record header", errNoNewline)
		case err != nil && first:
			return fmt.Errorf("record: line %d: not a record header: %v", line+1, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			var lost int64
			if te := (*pipes.TruncatedFrameError)(nil); errors.As(err, &te) {
				lost = te.Lost
			}
			return errors.Join(fmt.Errorf("record: line %d: no final newline (%d bytes): %w", line+1, lost, io.ErrUnexpectedEOF), gap)
		case err != nil:
			return errors.Join(fmt.Errorf("record: reading: %w", err), gap)
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			if first {
				return fmt.Errorf("record: line %d: not a record header: %w", line, err)
			}
			return errors.Join(fmt.Errorf("record: line %d: %w", line, err), gap)
		}
		if e.Ev == "" {
			return errors.Join(fmt.Errorf("record: line %d: no \"ev\" field", line), gap)
		}
		if (first || e.Ev == EvHeader) && (e.Ev != EvHeader || e.Header == nil || e.Header.V > SchemaVersion || e.Header.Schema != SchemaName) {
			return errors.Join(fmt.Errorf("record: line %d: not a record header of schema %s version ≤ %d", line, SchemaName, SchemaVersion), gap)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// lineTooLong is the error of a line over MaxLine.
type lineTooLong struct {
	line int64
	e    *pipes.FrameTooLargeError
}

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("record: line %d: %d bytes, over the %d-byte limit of a line: skipped (it starts %q)", e.line, e.e.Size, e.e.Limit, e.e.Head[:min(len(e.e.Head), 64)])
}

func (e *lineTooLong) Unwrap() error { return e.e }

var errNoNewline = fmt.Errorf("no newline in the first %d bytes", MaxLine)

// firstLine fails a read once MaxLine bytes have gone by without a
// newline: a first line that long is no header, and an endless one
// (/dev/zero) would otherwise be read to no end.
type firstLine struct {
	r    io.Reader
	n    int64
	done bool
}

func (f *firstLine) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if !f.done {
		if bytes.IndexByte(p[:n], '\n') >= 0 {
			f.done = true
		} else if f.n += int64(n); f.n > MaxLine {
			return n, errNoNewline
		}
	}
	return n, err
}

// Files returns the files of the record at path, oldest first: the
// rotated ones (path.N … path.1) that exist, then path itself. Read each
// in this order to read the whole record.
func Files(path string) []string {
	var rotated []string
	for i := 1; ; i++ {
		p := fmt.Sprintf("%s.%d", path, i)
		if _, err := os.Stat(p); err != nil {
			break
		}
		rotated = append(rotated, p)
	}
	out := make([]string, 0, len(rotated)+1)
	for i := len(rotated) - 1; i >= 0; i-- {
		out = append(out, rotated[i])
	}
	return append(out, path)
}
