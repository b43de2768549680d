package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Read reads the events of a record from r, one JSON object per
// line, calling fn for each in file order; fn returning an error stops the
// reading with that error. A record split by rotation is read by calling
// Read on each file in the order Files gives (the highest suffix, then down to
// the file without one); Seq continues across them. A line that is not an
// Event, or a header whose V is newer than SchemaVersion, is an error that
// names its line number. A last line without its newline (the proxy was
// killed while writing it) is reported as an error wrapping
// io.ErrUnexpectedEOF after the events before it.
func Read(r io.Reader, fn func(Event) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] != '\n' {
			return fmt.Errorf("record: line %d: no final newline (%d bytes): %w", line, len(b), io.ErrUnexpectedEOF)
		}
		if len(b) > 0 {
			var e Event
			if err := json.Unmarshal(b, &e); err != nil {
				return fmt.Errorf("record: line %d: %w", line, err)
			}
			if e.Ev == "" {
				return fmt.Errorf("record: line %d: no \"ev\" field", line)
			}
			if e.Ev == EvHeader && (e.Header == nil || e.Header.V > SchemaVersion || e.Header.Schema != SchemaName) {
				return fmt.Errorf("record: line %d: not a record header of schema %s version ≤ %d", line, SchemaName, SchemaVersion)
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("record: reading: %w", err)
		}
	}
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
