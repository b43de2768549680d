package record_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

// TestSample pins the record format: testdata/sample.ndjson is a record of
// a real session (package proxy's TestRecordSample -update rewrites it and
// checks that a live session uses only the fields it shows). Every line
// must decode into an Event without unknown fields and encode back to the
// same JSON, so a renamed, removed or retyped field fails here, and the
// sample must show every kind of event a session without trouble has.
func TestSample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "sample.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		d := json.NewDecoder(bytes.NewReader(line))
		d.DisallowUnknownFields()
		var e record.Event
		if err := d.Decode(&e); err != nil {
			t.Fatalf("sample line %d: %v", i+1, err)
		}
		back, _ := json.Marshal(e)
		var want, got map[string]any
		json.Unmarshal(line, &want)
		json.Unmarshal(back, &got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sample line %d does not survive decoding and encoding (-sample +now):\n%s", i+1, diff)
		}
		kinds[e.Ev] = true
	}
	for _, k := range []string{record.EvHeader, record.EvSpawn, record.EvChunk, record.EvFrame, record.EvBlock, record.EvUnblock, record.EvCancel, record.EvLate, record.EvEOF, record.EvClose, record.EvExit, record.EvFault, record.EvVerdict, record.EvSummary} {
		if !kinds[k] {
			t.Errorf("the sample has no %s event", k)
		}
	}
	// Read gives the same events in file order.
	var seqs []int64
	if err := record.Read(bytes.NewReader(b), func(e record.Event) error { seqs = append(seqs, e.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); len(seqs) != n || !slices.IsSorted(seqs) {
		t.Errorf("Read gave %d events with seq %v, want %d in order", len(seqs), seqs, n)
	}
}

// TestReadErrors: each kind of bad input is an error that names its line.
func TestReadErrors(t *testing.T) {
	header := `{"seq":0,"t":0,"ev":"header","header":{"v":1,"schema":"mcpstdio-proxy-record"}}` + "\n"
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", header + "{\n", "line 2: "},
		{"no ev", header + `{"seq":1}` + "\n", `line 2: no "ev" field`},
		{"newer schema", `{"seq":0,"ev":"header","header":{"v":99,"schema":"mcpstdio-proxy-record"}}` + "\n", "line 1: not a record header"},
		{"other schema", `{"seq":0,"ev":"header","header":{"v":1,"schema":"x"}}` + "\n", "line 1: not a record header"},
		{"cut off", header + `{"seq":1,"ev":"spawn"`, "line 2: no final newline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := record.Read(strings.NewReader(tc.in), func(record.Event) error { n++; return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want an error with %q", err, tc.want)
			}
			if tc.name == "cut off" && (!errors.Is(err, io.ErrUnexpectedEOF) || n != 1) {
				t.Errorf("cut off: %v after %d events, want io.ErrUnexpectedEOF after the header", err, n)
			}
		})
	}
	stop := errors.New("stop")
	if err := record.Read(strings.NewReader(header+header), func(record.Event) error { return stop }); err != stop {
		t.Errorf("Read returned %v, want fn's error", err)
	}
}

// TestFiles lists a rotated record oldest first.
func TestFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.ndjson")
	if got := record.Files(path); !slices.Equal(got, []string{path}) {
		t.Errorf("Files of an unrotated record = %q", got)
	}
	for _, p := range []string{path + ".1", path + ".2"} {
		os.WriteFile(p, nil, 0o600)
	}
	if got, want := record.Files(path), []string{path + ".2", path + ".1", path}; !slices.Equal(got, want) {
		t.Errorf("Files = %q, want %q", got, want)
	}
}

// TestSize: sizes in JSON and flags, and the errors of bad ones.
func TestSize(t *testing.T) {
	for in, want := range map[string]int64{"65536": 65536, "64KiB": 64 << 10, "1MiB": 1 << 20, "2G": 2 << 30, "3 KB": 3 << 10, "0": 0} {
		var s record.Size
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "lots", "9000000000GiB"} {
		var s record.Size
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, s)
		}
	}
	var s record.Size
	if err := s.Set("9000000000GiB"); err == nil || !strings.Contains(err.Error(), "over the largest size") {
		t.Errorf("an overflowing size: %v, want it named as over the largest size", err)
	}
	for s, want := range map[record.Size]string{64 << 10: "64KiB", 1 << 30: "1GiB", 1000: "1000", 0: "0"} {
		if s.String() != want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(s), s.String(), want)
		}
	}
	var f record.Fault
	if err := json.Unmarshal([]byte(`{"kind":"stop","after_bytes":"1MiB","for":"30s"}`), &f); err != nil || f.AfterBytes != 1<<20 || f.String() != "stop:after_bytes=1048576,for=30s" {
		t.Errorf("a fault from JSON: %+v (%v), %q", f, err, f.String())
	}
}
