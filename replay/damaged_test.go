package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/replay"
)

// TestReadDamaged: a record is user input. The proxy's sample with each
// kind of number in it changed (to 0, large, absurd and negative values)
// and with each line left out reads, within a bound, as a Record that can
// be written back, or as an error; never a panic or a hang. A kind of
// number is a field of an event kind in a direction ("off" of the out
// chunks): its first and last places in the sample are changed, not the
// other 70 chunks' alike.
func TestReadDamaged(t *testing.T) {
	t.Parallel() // it computes, without a bound it could miss: beside the tests that wait
	b, err := os.ReadFile(filepath.Join("..", "record", "testdata", "sample.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	try := func(what string, in []byte) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			rec, err := replay.Read(bytes.NewReader(in), replay.Redact("params.arguments", "-result.content.*.text"))
			if err == nil {
				err = rec.Write(new(bytes.Buffer))
				if err != nil {
					err = errAfterRead{err}
				}
			}
			done <- err
		}()
		select {
		case err := <-done:
			if _, ok := err.(errAfterRead); ok {
				t.Errorf("%s: Read accepted the record but Write failed: %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Read and Write took over 10s", what)
		}
	}
	for k, l := range numberKinds(t, b) {
		for _, v := range []int64{0, 1 << 20, 1 << 62, -1} {
			in := append(append(append([]byte(nil), b[:l[2]]...), strconv.FormatInt(v, 10)...), b[l[3]:]...)
			try("number "+strconv.Itoa(k)+" set to "+strconv.FormatInt(v, 10), in)
		}
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i := range lines {
		try("line "+strconv.Itoa(i+1)+" left out", bytes.Join(append(append([][]byte(nil), lines[:i]...), lines[i+1:]...), nil))
	}
	if _, err := replay.Read(bytes.NewReader(bytes.Replace(b, []byte(`"dir":"out"`), []byte(`"dir":"sideways"`), 1))); err == nil {
		t.Error("a record with a stream named sideways was accepted")
	}
}

type errAfterRead struct{ error }

// numberKinds returns where the numbers of b, a record, are (as
// FindAllSubmatchIndex gives them: the digits are [l[2], l[3])), the first
// and the last of each kind: the same field ("seq", "off", "n", …) of the
// same event kind in the same direction.
func numberKinds(t *testing.T, b []byte) [][]int {
	t.Helper()
	num := regexp.MustCompile(`"([^"]*)":(-?\d+)`)
	first, last := map[string][]int{}, map[string][]int{}
	var order []string
	start := 0
	for line := range bytes.Lines(b) {
		var e struct{ Ev, Dir string }
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("the sample's line at byte %d: %v", start, err)
		}
		for _, l := range num.FindAllSubmatchIndex(line, -1) {
			kind := e.Ev + " " + e.Dir + " " + string(line[l[2]:l[3]])
			at := []int{l[0] + start, l[1] + start, l[4] + start, l[5] + start}
			if first[kind] == nil {
				first[kind] = at
				order = append(order, kind)
			}
			last[kind] = at
		}
		start += len(line)
	}
	var out [][]int
	for _, kind := range order {
		out = append(out, first[kind])
		if last[kind][0] != first[kind][0] {
			out = append(out, last[kind])
		}
	}
	return out
}

// TestCutRecord: a record whose last line was cut (no newline) or damaged
// plays up to the cut, with a note; damage before the last line is still
// an error naming the line.
func TestCutRecord(t *testing.T) {
	t.Parallel() // it waits (the fake, the patience): side by side with the other waiting tests
	b, err := os.ReadFile(filepath.Join("testdata", "session.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty string after the last newline
	mid := len(lines) * 3 / 5
	head := bytes.Join(lines[:mid], nil)
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"last line without newline", append(append([]byte(nil), head...), lines[mid][:len(lines[mid])/2]...)},
		{"damaged last line", append(append([]byte(nil), head...), []byte("{\"seq\":99,\"ev\":\"frame\",\"dir\":\"out\",\"off\":-5}\n")...)},
		{"not JSON last line", append(append([]byte(nil), head...), []byte("{\"seq\":99,\"ev\":\"fr\n")...)},
		{"whole record without its final newline", b[:len(b)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := replay.Read(bytes.NewReader(tc.in))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if rec.Cut == "" {
				t.Fatal("Record.Cut is empty")
			}
			rep, err := replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Same())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Err() != nil || !strings.Contains(rep.String(), "note: the record's last line was cut or damaged") {
				t.Errorf("replay of the cut record against the same server: %s", rep)
			}
		})
	}
	damaged := bytes.Join(append(append(append([][]byte(nil), lines[:mid]...), []byte("{\"seq\":99,\"ev\":\"fr\n")), lines[mid:]...), nil)
	if _, err := replay.Read(bytes.NewReader(damaged)); err == nil || !strings.Contains(err.Error(), "line "+strconv.Itoa(mid+1)) {
		t.Errorf("a damaged line %d before the end: Read error %v, want one naming the line", mid+1, err)
	}
}
