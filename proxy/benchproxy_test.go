package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// The proxy process of the benchmarks runs the proxy the way
// `mcpstdio proxy` runs it: recording to a file and rewriting a status file
// beside it (JSON, written to a temporary file and renamed, as the
// command's state package does). Environment variables a benchmark sets
// for the process add measurements: PROXY_CPUPROFILE (a file for the
// proxy's own CPU profile; a benchmark's -cpuprofile is the host's),
// PROXY_HWM (a file for its peak resident memory, Linux: "VmHWM RssAnon
// RssFile" in kB, the last two the most sampled every 10ms, as VmHWM
// counts the pages of the binary too) and PROXY_METRICS (a file for how
// much detail the observer lost: "DroppedBytes StdinBytes StdoutBytes
// StderrBytes" of the summary's metrics).

// runProxy proxies cmd to host until the server ends, recording to log (a
// file in a temporary directory, removed at the end, if log is ""), and
// returns what Proxy.Wait returns.
func runProxy(ctx context.Context, cmd *exec.Cmd, host proxy.Streams, log string) error {
	if log == "" {
		dir, err := os.MkdirTemp("", "proxybench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		log = filepath.Join(dir, "rec.ndjson")
	}
	l, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer l.Close()
	cfg := proxy.Config{Record: l, OnStatus: func(st proxy.Status) error {
		return writeStatus(log+".status.json", st, log)
	}}
	if path := os.Getenv("PROXY_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	p, err := proxy.Start(ctx, cmd, host, cfg)
	if err != nil {
		return err
	}
	hwm := os.Getenv("PROXY_HWM")
	if hwm == "" {
		return writeMetrics(p.Wait())
	}
	sampled := make(chan [2]int64, 1)
	stop := make(chan struct{})
	go func() {
		var anon, file int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			anon, file = max(anon, statusKB("RssAnon")), max(file, statusKB("RssFile"))
			select {
			case <-stop:
				sampled <- [2]int64{anon, file}
				return
			case <-tick.C:
			}
		}
	}()
	err = writeMetrics(p.Wait())
	close(stop)
	most := <-sampled
	if werr := os.WriteFile(hwm, fmt.Appendf(nil, "%d %d %d", statusKB("VmHWM"), most[0], most[1]), 0o600); err == nil {
		err = werr
	}
	return err
}

// writeStatus rewrites the status file at path as `mcpstdio proxy` does:
// the status and the record's file, indented JSON, renamed into place.
func writeStatus(path string, st proxy.Status, log string) error {
	b, err := json.MarshalIndent(struct {
		proxy.Status
		Log string `json:"log,omitempty"`
	}{st, log}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// writeMetrics writes the counts of PROXY_METRICS, if it is set.
func writeMetrics(res *proxy.Result, err error) error {
	path := os.Getenv("PROXY_METRICS")
	if path == "" || res == nil {
		return err
	}
	m := res.Status.Metrics
	if werr := os.WriteFile(path, fmt.Appendf(nil, "%d %d %d %d", m.DroppedBytes, m.StdinBytes, m.StdoutBytes, m.StderrBytes), 0o600); err == nil {
		err = werr
	}
	return err
}

// statusKB is a field of this process's /proc status in kB; 0 where there
// is none.
func statusKB(field string) int64 {
	n, _ := proc.StatusKB(os.Getpid(), field)
	return n
}
