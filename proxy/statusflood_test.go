package proxy_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
)

// TestStatusDuringFlood: while a server floods its stdout with lines faster
// than the observer can follow them (yes: two bytes a line, 64 KiB a
// read), the status is still reported, as of what the observer has seen.
// The observer handled every event waiting before it looked at its ticks
// again, and in such a flood one always waits: it reported no status until
// the flood ended (at most one, from a tick before the flood began), so
// the test waits for two.
func TestStatusDuringFlood(t *testing.T) {
	t.Parallel()
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes here")
	}
	var calls atomic.Int64
	reported := make(chan struct{})
	start := time.Now()
	cfg := proxy.Config{Record: io.Discard, StatusInterval: 10 * time.Millisecond, OnStatus: func(st proxy.Status) error {
		t.Logf("status reported at %v, as of %v", time.Since(start).Round(time.Millisecond), st.Updated.Sub(start).Round(time.Millisecond))
		if calls.Add(1) == 2 {
			close(reported)
		}
		return nil
	}}
	var ends [3][2]*os.File
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		ends[i] = [2]*os.File{r, w}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound(t))
	defer cancel()
	p, err := proxy.Start(ctx, exec.Command(yes), proxy.Streams{Stdin: ends[0][0], Stdout: ends[1][1], Stderr: ends[2][1]}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go io.Copy(io.Discard, ends[1][0]) // ends with the proxy's Close
	select {
	case <-reported:
	case <-time.After(bound(t)):
		t.Fatalf("the status was reported %d times in %v of flood, want 2", calls.Load(), bound(t))
	}
}
