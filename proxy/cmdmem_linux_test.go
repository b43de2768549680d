//go:build linux

package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHugeLineCommand: one 1 GiB line through the command a user
// runs, `mcpstdio proxy` (the binary $MCPSTDIO_BIN names, as
// cmd/internal/benchratios builds it; skipped without one), recording to a
// state directory of its own: its peak resident memory (VmHWM, sampled
// every 10ms with the most RssAnon and RssFile from /proc/PID/status, as
// the command has no hook for it).
func BenchmarkHugeLineCommand(b *testing.B) {
	bin := os.Getenv("MCPSTDIO_BIN")
	if bin == "" {
		b.Skip("MCPSTDIO_BIN names no mcpstdio binary")
	}
	b.Run("1x1024MiB", func(b *testing.B) { hugeLineCommand(b, bin, "proxy") })
}

// BenchmarkHugeLineProxyCommand is BenchmarkHugeLineCommand for the lean
// command, mcpstdio-proxy (the binary $MCPSTDIO_PROXY_BIN names): the same
// proxy in a binary that links nothing else.
func BenchmarkHugeLineProxyCommand(b *testing.B) {
	bin := os.Getenv("MCPSTDIO_PROXY_BIN")
	if bin == "" {
		b.Skip("MCPSTDIO_PROXY_BIN names no mcpstdio-proxy binary")
	}
	b.Run("1x1024MiB", func(b *testing.B) { hugeLineCommand(b, bin) })
}

// hugeLineCommand runs one 1 GiB line through the command bin with args
// (before the proxy's flags) per iteration and reports the command's most
// VmHWM, RssAnon and RssFile.
func hugeLineCommand(b *testing.B, bin string, args ...string) {
	const size = 1 << 30
	b.SetBytes(size)
	var hwm, anon, file int64
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		server := mustHelper(ctx, "flood", fmt.Sprint(size), "1", "once")
		argv := slices.Concat(args, []string{"-dir", b.TempDir(), "--", server.Path}, server.Args[1:])
		cmd := exec.CommandContext(ctx, bin, argv...)
		cmd.Env, cmd.Stderr = server.Env, os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		done := make(chan [3]int64, 1)
		go func() { done <- sampleStatus(cmd.Process.Pid, ctx) }()
		n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{out}, make([]byte, 64<<10))
		werr := cmd.Wait()
		cancel()
		most := <-done
		if werr != nil || n != size {
			b.Fatalf("%s: %v; read %d bytes, want %d", cmd, werr, n, size)
		}
		hwm, anon, file = max(hwm, most[0]), max(anon, most[1]), max(file, most[2])
	}
	b.ReportMetric(float64(hwm)/(1<<10), "cmd-VmHWM-MiB")
	b.ReportMetric(float64(anon)/(1<<10), "cmd-anon-MiB")
	b.ReportMetric(float64(file)/(1<<10), "cmd-file-MiB")
}

// sampleStatus reads process pid's VmHWM (the last seen) and the most
// RssAnon and RssFile (kB) every 10ms until it is gone or ctx ends.
func sampleStatus(pid int, ctx context.Context) [3]int64 {
	var most [3]int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || !bytes.Contains(b, []byte("VmHWM:")) { // gone, or a zombie
			return most
		}
		for i, field := range []string{"VmHWM:", "RssAnon:", "RssFile:"} {
			if _, v, ok := bytes.Cut(b, []byte(field)); ok {
				v, _, _ = bytes.Cut(v, []byte("kB"))
				if kb, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
					most[i] = max(most[i], kb)
				}
			}
		}
		select {
		case <-ctx.Done():
			return most
		case <-tick.C:
		}
	}
}
