package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// recordCut returns the cut event that ends the record at path (the last
// line of its newest file), if it has one: writing the record failed and
// it ends early (record.EvCut).
func recordCut(path string) (record.Event, bool) {
	f, err := os.Open(path)
	if err != nil {
		return record.Event{}, false
	}
	defer f.Close()
	const tail = 64 << 10 // a cut event is one short line
	fi, err := f.Stat()
	if err != nil {
		return record.Event{}, false
	}
	off := max(fi.Size()-tail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return record.Event{}, false
	}
	b = bytes.TrimRight(b, "\n")
	line := b[bytes.LastIndexByte(b, '\n')+1:]
	var e record.Event
	if json.Unmarshal(line, &e) != nil || e.Ev != record.EvCut {
		return record.Event{}, false
	}
	return e, true
}

// cutText says why a record ends early, from its cut event.
func cutText(e record.Event) string {
	return "the record is damaged: writing it failed at +" + (time.Duration(e.T) * time.Microsecond).Round(time.Millisecond).String() +
		" (" + e.Err + "), and it ends there; the proxy went on forwarding, unrecorded"
}
