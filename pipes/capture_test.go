package pipes_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/pipes"
)

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		wantBytes string
		wantTotal int64
	}{
		{"empty", 8, nil, "", 0},
		{"fits", 8, []string{"abc", "de"}, "abcde", 5},
		{"exactly limit", 8, []string{"abcdefgh"}, "abcdefgh", 8},
		{"one write over", 8, []string{"abcdefghij"}, "abcdghij", 10},
		{"many small writes", 6, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "abcghi", 9},
		{"ring wraps", 4, []string{"ab", "cd", "ef", "g", "hij"}, "abij", 10},
		{"zero limit counts only", 0, []string{"abc"}, "", 3},
		{"odd limit", 5, []string{"0123456789"}, "01789", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pipes.NewCapture(tt.limit)
			for _, w := range tt.writes {
				n, err := c.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := string(c.Bytes()); got != tt.wantBytes {
				t.Errorf("Bytes() = %q, want %q", got, tt.wantBytes)
			}
			if got := c.Total(); got != tt.wantTotal {
				t.Errorf("Total() = %d, want %d", got, tt.wantTotal)
			}
			wantDropped := tt.wantTotal - int64(len(tt.wantBytes))
			if got := c.Dropped(); got != wantDropped {
				t.Errorf("Dropped() = %d, want %d", got, wantDropped)
			}
			if got := c.Truncated(); got != (wantDropped > 0) {
				t.Errorf("Truncated() = %v, want %v", got, wantDropped > 0)
			}
			marker := fmt.Sprintf("[… %d bytes dropped …]", wantDropped)
			if s := c.String(); (wantDropped > 0) != strings.Contains(s, marker) {
				t.Errorf("String() = %q; want marker %q only when bytes were dropped", s, marker)
			}
		})
	}
}

// TestCaptureMatchesReference writes random-sized pieces and compares with
// the head and tail of everything written.
func TestCaptureMatchesReference(t *testing.T) {
	for _, limit := range []int{1, 2, 7, 64, 1000} {
		c := pipes.NewCapture(limit)
		var all []byte
		for i := range 300 {
			p := bytes.Repeat([]byte{byte(i)}, (i*7919)%97)
			all = append(all, p...)
			c.Write(p)
		}
		head := all[:limit/2]
		tail := all[len(all)-(limit-limit/2):]
		want := append(append([]byte(nil), head...), tail...)
		if got := c.Bytes(); !bytes.Equal(got, want) {
			t.Errorf("limit %d: Bytes() differs from head+tail of the input", limit)
		}
		if c.Total() != int64(len(all)) {
			t.Errorf("limit %d: Total() = %d, want %d", limit, c.Total(), len(all))
		}
	}
}

func TestCaptureConcurrentWriters(t *testing.T) {
	c := pipes.NewCapture(1024)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Write([]byte("0123456789"))
				_ = c.String()
			}
		}()
	}
	wg.Wait()
	if got, want := c.Total(), int64(8*1000*10); got != want {
		t.Errorf("Total() = %d, want %d", got, want)
	}
}

// TestCaptureDrainsChild runs a real child that writes 64 MiB to stdout and
// 64 MiB to stderr. With 4 KiB captures the child must never block and must
// exit normally; Total must be exact.
func TestCaptureDrainsChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testBound(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=flood", "GORACE=atexit_sleep_ms=0")
	stdout, stderr := pipes.NewCapture(4096), pipes.NewCapture(4096)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v (stdout %d bytes, stderr %d bytes captured so far)", err, stdout.Total(), stderr.Total())
	}
	for name, c := range map[string]*pipes.Capture{"stdout": stdout, "stderr": stderr} {
		if got := c.Total(); got != floodSize {
			t.Errorf("%s Total() = %d, want %d", name, got, floodSize)
		}
		if !c.Truncated() {
			t.Errorf("%s Truncated() = false, want true", name)
		}
		if got := len(c.Bytes()); got != 4096 {
			t.Errorf("%s kept %d bytes, want 4096", name, got)
		}
		if !bytes.HasPrefix(c.Bytes(), []byte("abcdefgh")) {
			t.Errorf("%s head = %q, want the child's first bytes", name, c.Bytes()[:8])
		}
	}
}

// testBound is the upper bound for one blocking step of a test: generous,
// and inside the test binary's deadline so a hang fails the test by name.
func testBound(t *testing.T) time.Duration {
	t.Helper()
	return bound.For(t, 60*time.Second)
}
