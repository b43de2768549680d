package record_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
)

const header = `{"seq":0,"t":0,"ev":"header","header":{"v":1,"schema":"mcpstdio-proxy-record"}}` + "\n"

// TestReadNotARecord: input that is not a record is an error before any
// event: a directory, empty input, blank lines, a first line that is not
// a header (JSON or not, with or without its newline), a future schema.
func TestReadNotARecord(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for _, tc := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{"directory", dir, "not a record header"},
		{"empty", strings.NewReader(""), "empty input: not a record"},
		{"blank lines", strings.NewReader("\n\r\n\n"), "empty input: not a record"},
		{"text", strings.NewReader("hello\n"), "line 1: not a record header"},
		{"text without newline", strings.NewReader("hello"), "line 1: not a record header"},
		{"an event first", strings.NewReader(`{"seq":1,"t":0,"ev":"spawn"}` + "\n" + header), "line 1: not a record header"},
		{"future schema", strings.NewReader(`{"seq":0,"ev":"header","header":{"v":2,"schema":"mcpstdio-proxy-record"}}` + "\n"), "line 1: not a record header"},
		{"header cut", strings.NewReader(header[:20]), "line 1: not a record header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := record.Read(tc.in, func(record.Event) error { n++; return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) || n != 0 {
				t.Errorf("Read: %v after %d events, want an error with %q and no event", err, n, tc.want)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Read: %v, which wraps io.ErrUnexpectedEOF: it would read as a record cut short", err)
			}
		})
	}
}

// zeros is an endless reader of zero bytes, as /dev/zero, that counts
// what it gave.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadEndlessFirstLine: an endless input without a newline
// (/dev/zero) is refused once MaxLine bytes have gone by, not read
// forever.
func TestReadEndlessFirstLine(t *testing.T) {
	z := &zeros{}
	err := record.Read(z, func(record.Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "not a record header") {
		t.Errorf("Read of endless zeros: %v, want an error", err)
	}
	if z.n > 2*record.MaxLine {
		t.Errorf("Read took %d bytes of zeros before it stopped, want at most about MaxLine (%d)", z.n, record.MaxLine)
	}
	if runtime.GOOS == "linux" {
		f, err := os.Open("/dev/zero")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := record.Read(f, func(record.Event) error { return nil }); err == nil {
			t.Error("Read of /dev/zero: no error")
		}
	}
}

// longLine is a record with a line of size bytes ('a's) between the
// header and a spawn event, made as it is read.
func longLine(size int64) io.Reader {
	return io.MultiReader(strings.NewReader(header+`{"seq":1,"ev":"x","text":"`), io.LimitReader(repeat('a'), size-28), strings.NewReader("\"}\n"+`{"seq":2,"t":5,"ev":"spawn"}`+"\n"))
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	// Filled by doubling copies, not byte by byte: under -race each byte
	// stored in a loop is a checked write (most of the test's CPU).
	p[0] = byte(r)
	for n := 1; n < len(p); n *= 2 {
		copy(p[n:], p[:n])
	}
	return len(p), nil
}

// TestReadLongLineIsAGap: a line over MaxLine (16 times it here) is
// skipped without being held in memory: the events after it are read, and
// the error at the end names the line and its size and wraps the
// framer's FrameTooLargeError.
func TestReadLongLineIsAGap(t *testing.T) {
	size := int64(16 * record.MaxLine)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var evs []string
	err := record.Read(longLine(size), func(e record.Event) error { evs = append(evs, e.Ev); return nil })
	runtime.ReadMemStats(&after)
	var tl *pipes.FrameTooLargeError
	if !errors.As(err, &tl) || tl.Size != size || !strings.Contains(err.Error(), "line 2: 268435456 bytes") {
		t.Errorf("Read: %v, want the line 2 of %d bytes named, wrapping a FrameTooLargeError", err, size)
	}
	if strings.Join(evs, " ") != "header spawn" {
		t.Errorf("events read: %q, want the header and the spawn after the long line", evs)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*record.MaxLine {
		t.Errorf("Read allocated %d bytes for a line of %d, want at most 4 × MaxLine (%d)", alloc, size, 4*record.MaxLine)
	}
	// A record cut in a long line is cut, as one cut in a short one.
	err = record.Read(io.MultiReader(strings.NewReader(header), io.LimitReader(repeat('a'), 2*record.MaxLine)), func(record.Event) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Read of a record cut in a long line: %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzRead: whatever the input, Read returns (no panic, no hang) and
// calls fn only with events that have an Ev, the first a header of this
// schema.
func FuzzRead(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "sample.ndjson"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(b), "", "\n", "hello", header, header + "{\n", header + `{"seq":1}` + "\n",
		`{"seq":0,"ev":"header","header":{"v":99,"schema":"mcpstdio-proxy-record"}}` + "\n",
		header + `{"seq":1,"ev":"spawn"`, header + "\r\n\r\n" + `{"seq":1,"t":9223372036854775807,"ev":"frame","dir":"x\" onerror=\"alert(1)","id":"` + strings.Repeat("i", 200) + `"}` + "\n",
		header + `{"seq":1,"t":1,"ev":"frame","method":"\u001b]0;title\u0007","text":"\u001b[2J"}` + "\n",
		"\x00\x00\x00", header + header + header,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n := 0
		record.Read(strings.NewReader(string(in)), func(e record.Event) error {
			if e.Ev == "" || (n == 0 && (e.Ev != record.EvHeader || e.Header == nil || e.Header.V > record.SchemaVersion)) {
				t.Fatalf("event %d: %+v", n, e)
			}
			n++
			return nil
		})
	})
}
