package replay_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/replay"
)

// TestReadDamaged: a record is user input. The proxy's sample with each
// number in it changed (to 0, large, absurd and negative values) and with
// each line left out reads, within a bound, as a Record that can be
// written back, or as an error; never a panic or a hang.
func TestReadDamaged(t *testing.T) {
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
	nums := regexp.MustCompile(`":(-?\d+)`).FindAllSubmatchIndex(b, -1)
	for k, l := range nums {
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
