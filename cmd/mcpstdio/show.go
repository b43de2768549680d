package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
	"github.com/mcpstdio/mcpstdio/internal/term"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
)

const showUsage = `usage: mcpstdio show [-json] [-html FILE] RECORD

Shows what a record of mcpstdio proxy holds: the header (server command, platform,
pipe sizes; environment variable names are counted, their values are never recorded),
the verdicts in words, the metrics, what was pending at the end, how much detail was
lost, and a timeline of the events that matter with times since the start (long runs
of ordinary frames folded). A record split by rotation (RECORD.1, RECORD.2, …) is read
whole, oldest file first.

-html writes one self-contained HTML file (no network, nothing external) to attach to
a bug report: a timeline per direction with frames, blocked writes, stalls, cancels and
late answers, each request as a span from sent to delivered; click a mark for its frame.

Flags:
`

// runShow runs `mcpstdio show`.
func runShow(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("mcpstdio show", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), showUsage)
		fset.PrintDefaults()
	}
	asJSON := fset.Bool("json", false, "print the session as JSON (header, verdicts, metrics, pending, lost, frames, requests, blocks, marks)")
	html := fset.String("html", "", "write the HTML report to `FILE` (- for stdout)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() != 1 {
		fmt.Fprintf(stderr, "mcpstdio show: want one record file, got %d arguments\n", fset.NArg())
		return 2
	}
	s, err := readRecordFiles(fset.Arg(0))
	if s == nil {
		fmt.Fprintf(stderr, "mcpstdio show: %s\n", term.Line(err.Error()))
		return 1
	}
	// Shown despite an error: a record cut in its last line (the proxy was
	// killed) or with a line over record.MaxLine; anything else is not a
	// record. The error may quote the record.
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, new(*pipes.FrameTooLargeError)) {
		fmt.Fprintf(stderr, "mcpstdio show: %s\n", term.Line(err.Error()))
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio show: %s (showing what could be read)\n", term.Line(err.Error()))
	}
	if !s.Summary {
		s.SetProxyState(s.ProxyStateOf(fset.Arg(0)))
	}
	switch {
	case *html == "-":
		if err := s.WriteHTML(stdout, filepath.Base(fset.Arg(0))); err != nil {
			fmt.Fprintf(stderr, "mcpstdio show: writing the HTML: %v\n", err)
			return 1
		}
	case *html != "":
		var b bytes.Buffer
		if err := s.WriteHTML(&b, filepath.Base(fset.Arg(0))); err != nil {
			fmt.Fprintf(stderr, "mcpstdio show: writing the HTML: %v\n", err)
			return 1
		}
		if err := writeReport(*html, b.Bytes(), record.Files(fset.Arg(0))); err != nil {
			fmt.Fprintf(stderr, "mcpstdio show: -html: %s\n", term.Line(err.Error()))
			return 1
		}
	case *asJSON:
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "mcpstdio show: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
	default:
		if err := s.WriteText(stdout); err != nil {
			return 1
		}
	}
	if cut, ok := recordCut(fset.Arg(0)); ok {
		fmt.Fprintf(stderr, "mcpstdio show: %s\n", term.Line(cutText(cut)))
		return 1
	}
	return 0
}

// writeReport writes a report to path, never over one of the files it was
// made from (inputs, the record last), whatever the names (a symbolic or
// hard link is the same file), nor to a new file named as one of the
// record's rotated files: a regular file is replaced whole (a temporary file renamed
// over it: a reader never sees half of it), anything else (a device, a
// FIFO) is written in place, never replaced.
func writeReport(path string, b []byte, inputs []string) error {
	if rec := inputs[len(inputs)-1]; isRotatedName(path, rec) {
		return fmt.Errorf("refused: %s is named as a rotated file of %s, which the output is made from (it would be read as part of the record): name a new file", path, rec)
	}
	if out, err := os.Stat(path); err == nil {
		for _, in := range inputs {
			if fi, err := os.Stat(in); err == nil && os.SameFile(fi, out) {
				return fmt.Errorf("refused: %s is %s, which the output is made from: name a new file", path, in)
			}
		}
	}
	err := atomicfile.Write(path, b)
	if errors.Is(err, atomicfile.ErrNotRegular) {
		err = atomicfile.WriteInPlace(path, b)
	}
	return err
}

// isRotatedName reports whether path is named as a rotated file of the
// record at rec (rec.N), whether or not it exists yet: a file made there
// is read as part of the record (record.Files), and the proxy rotates
// into it.
func isRotatedName(path, rec string) bool {
	p, err1 := filepath.Abs(path)
	r, err2 := filepath.Abs(rec)
	if err1 != nil || err2 != nil {
		return false
	}
	n, ok := strings.CutPrefix(p, r+".")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// readRecordFiles reads the record at path and its rotated files, oldest
// first (record.Files). The Session is nil only when nothing could be read.
func readRecordFiles(path string) (*page.Session, error) {
	var rs []io.Reader
	for _, p := range record.Files(path) {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	return page.Read(rs...)
}
