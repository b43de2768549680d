package replay_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// bigCalls is a host that calls big n times, size bytes each.
func bigCalls(n, size int) func(t *testing.T, s *mcptest.Session, _ *sink) {
	return func(t *testing.T, s *mcptest.Session, _ *sink) {
		for range n {
			if _, err := s.CallTool(ctxFor(t), fakeserver.ToolBig, fakeserver.BigArgs{Bytes: size}.Map()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLoadKeepsBodiesOnDisk: a loaded record keeps its long bodies on
// disk, not in memory — what stays on the heap is a small part of the
// bodies' bytes — and reads them back whole (their checksums are the
// recorded ones); saved again, it is the same record.
func TestLoadKeepsBodiesOnDisk(t *testing.T) {
	b := recordSession(t, recordConfig(), nil, bigCalls(4, 1<<20))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec, err := replay.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	var bodies int64
	for _, f := range rec.Server {
		if f.Size > 64<<10 {
			bodies += f.Size
			if !f.Whole() || f.Body != nil {
				t.Errorf("frame seq %d (%d bytes): Whole %v, %d bytes in Body; want it whole, on disk", f.Seq, f.Size, f.Whole(), len(f.Body))
			}
			l := f.Line()
			if got := fmt.Sprintf("crc32c:%08x", crc32.Checksum(l[:len(l)-1], crc32.MakeTable(crc32.Castagnoli))); got != f.Hash {
				t.Errorf("frame seq %d read back with checksum %s, recorded %s", f.Seq, got, f.Hash)
			}
		}
	}
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("the loaded record holds %d bytes on the heap for %d bytes of long bodies", live, bodies)
	if bodies < 4<<20 || live > bodies/4 {
		t.Errorf("the loaded record holds %d bytes on the heap for %d bytes of long bodies; want under a quarter", live, bodies)
	}
	var out bytes.Buffer
	if err := rec.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), b) {
		t.Errorf("the record saved again differs from the one read (%d bytes, read %d)", out.Len(), len(b))
	}
	runtime.KeepAlive(rec)
}

// TestMakeBigRecord writes, when REPLAY_BIG_RECORD names a file, a record
// of about 500 MB (120 calls of big, 4 MiB each, through the proxy with
// bodies kept), to measure a replay's peak memory by hand:
//
//	REPLAY_BIG_RECORD=/tmp/big.ndjson go test -run TestMakeBigRecord ./replay
//	/usr/bin/time -v mcpstdio replay -record /tmp/big.ndjson -- mcpstdio fake
func TestMakeBigRecord(t *testing.T) {
	out := os.Getenv("REPLAY_BIG_RECORD")
	if out == "" {
		t.Skip("set REPLAY_BIG_RECORD=FILE to write a 500 MB record there")
	}
	if err := os.WriteFile(out, recordSession(t, recordConfig(), nil, bigCalls(120, 4<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMeasureHost replays, when REPLAY_MEASURE names a record and
// REPLAY_MEASURE_SERVER a server command (a path, no arguments but
// "fake"), the record with Host against it and logs the test process's
// peak RSS (Linux's VmHWM), to measure by hand:
//
//	REPLAY_MEASURE=/tmp/big.ndjson REPLAY_MEASURE_SERVER=$(which mcpstdio) go test -run TestMeasureHost -v ./replay
func TestMeasureHost(t *testing.T) {
	path, server := os.Getenv("REPLAY_MEASURE"), os.Getenv("REPLAY_MEASURE_SERVER")
	if path == "" || server == "" {
		t.Skip("set REPLAY_MEASURE=RECORD and REPLAY_MEASURE_SERVER=MCPSTDIO to measure a replay's peak memory")
	}
	rec, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), mcptest.Command(server, "fake"), rec)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM") {
			t.Logf("%s after replay.Host: %s", l, strings.SplitN(rep.String(), "\n", 2)[0])
		}
	}
}

// TestRedactLongBody: a redaction that leaves a long body long (its
// "jsonrpc" hashed) is saved and read back whole: the chunks rebuilt from
// the body on disk hold the redacted frame.
func TestRedactLongBody(t *testing.T) {
	t.Parallel() // it waits (the fake, the patience): side by side with the other waiting tests
	b := recordSession(t, recordConfig(), nil, bigCalls(1, 1<<20))
	rec, err := replay.Read(bytes.NewReader(b), replay.Redact("jsonrpc"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rec.Write(&out); err != nil {
		t.Fatal(err)
	}
	back, err := replay.Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, f := range back.Server {
		if f.Size < 1<<20 {
			continue
		}
		long++
		if l := f.Line(); !f.Whole() || !bytes.HasPrefix(l, []byte(`{"jsonrpc":"sha256:`)) || !bytes.HasSuffix(l, []byte("}\n")) {
			t.Errorf("the long response read back: whole %v, %.40q … %q", f.Whole(), l, l[max(0, len(l)-8):])
		}
	}
	if long != 1 {
		t.Errorf("%d long responses read back, want 1", long)
	}
}
