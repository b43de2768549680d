package mcptest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/mcptest/internal/testserver"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestWaitTimeoutDiagnosis: a wait that hits its bound returns a
// *WaitError that names the pending request and the pipes.
func TestWaitTimeoutDiagnosis(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child))
		p := s.Send(wire.MethodToolsCall, call("wait-cancel", nil)) // never answers uncancelled
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := p.Wait(ctx)
		var we *mcptest.WaitError
		if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want a *WaitError wrapping context.DeadlineExceeded", err)
		}
		for _, want := range []string{"verdict:", "pending: tools/call id=", "stdout pipe: ", "host reads: running", "transcript tail:"} {
			if !strings.Contains(we.Diagnosis, want) {
				t.Errorf("diagnosis lacks %q:\n%s", want, we.Diagnosis)
			}
		}
		if !child && !strings.Contains(we.Diagnosis, "server goroutines:") {
			t.Errorf("in-process diagnosis lacks goroutines:\n%s", we.Diagnosis)
		}
	})
}

func TestWaitWriterBlockedNeedsStall(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, target(t, false))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := s.WaitWriterBlocked(ctx)
	if err == nil || !strings.Contains(err.Error(), "not stalled") {
		t.Fatalf("WaitWriterBlocked without a stall = %v, want an error saying reads are not stalled", err)
	}
}

// TestCloseWhileBlocked: Close ends a server blocked writing stdout with
// host reads stalled (it resumes reading so stdout drains).
func TestCloseWhileBlocked(t *testing.T) {
	t.Parallel() // it waits (graces, bounds): side by side with the other waiting tests
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s, err := mcptest.Start(t.Context(), target(t, child), mcptest.WithGrace(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		s.StallReads()
		p := s.Send(wire.MethodToolsCall, call("big", map[string]any{"size": big}))
		if err := s.WaitWriterBlocked(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		if st := s.Stats(); len(st.Exit.Signals) != 0 {
			t.Errorf("Close needed signals (%v) for a server that only needed its stdout read", st.Exit)
		}
	})
}

// TestWaitStdoutBytes: cancel once the response has started.
func TestWaitStdoutBytes(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child))
		start := s.Stats().StdoutBytes
		s.StallReadsAfter(1000)
		p := s.Send(wire.MethodToolsCall, call("big", map[string]any{"size": 1 << 20}))
		if err := s.WaitStdoutBytes(ctx, start+1000); err != nil {
			t.Fatal(err)
		}
		if got := s.Stats().StdoutBytes; got != start+1000 {
			t.Errorf("StdoutBytes = %d with reads stalled after 1000 more, want %d", got, start+1000)
		}
		if err := p.Cancel("response started"); err != nil {
			t.Fatal(err)
		}
		s.ResumeReads()
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Late {
			t.Errorf("response after Cancel not marked Late")
		}
	})
}

// TestModernServerRequest: in the modern era a request from the server is
// a protocol violation, counted and refused.
func TestModernServerRequest(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child, "modern"))
		r, err := s.Call(t.Context(), wire.MethodToolsCall, call("ping-host", nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, r); !strings.Contains(got, `"code":-32601`) {
			t.Errorf("host's answer to the server's ping = %s, want -32601", got)
		}
		if st := s.Stats(); st.ProtocolViolations != 1 {
			t.Errorf("Stats.ProtocolViolations = %d, want 1", st.ProtocolViolations)
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func TestStderrTee(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		var buf syncBuffer
		s := mcptest.StartServer(t, target(t, child, "stderr=1000"), mcptest.WithStderr(&buf))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		buf.mu.Lock()
		got := int64(buf.b.Len())
		buf.mu.Unlock()
		if got+st.StderrTeeDropped != st.StderrBytes || st.StderrBytes < 1000 {
			t.Errorf("tee got %d bytes + %d dropped, stderr %d bytes; want them to add up, >= 1000", got, st.StderrTeeDropped, st.StderrBytes)
		}
	})
}

// TestHelperUnknownName: a child asked for a helper it does not have exits
// 2 with a message naming it.
func TestHelperUnknownName(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPTEST_HELPER=no-such-helper")
	s := mcptest.StartServer(t, mcptest.Exec(cmd), mcptest.WithoutHandshake())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Exit.Code != 2 || !bytes.Contains(s.Stderr(), []byte(`"no-such-helper" is not registered`)) {
		t.Errorf("Exit %v, stderr %q; want exit code 2 and a message naming the helper", st.Exit, s.Stderr())
	}
}

func TestRegisterHelperTwicePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Errorf("RegisterHelper with a duplicate name did not panic")
		}
	}()
	mcptest.RegisterHelper("test", nil)
}

// TestWaitWriterBlockedNoFalsePositive: a small response sitting in a small
// stalled pipe, with the server waiting on stdin, is not a blocked writer.
func TestWaitWriterBlockedNoFalsePositive(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("WithPipeCapacity needs Linux F_SETPIPE_SZ")
	}
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child), mcptest.WithPipeCapacity(4096))
		s.StallReads()
		p := s.Send(wire.MethodToolsCall, call("echo", map[string]any{"text": "small"}))
		// The response is in the pipe once the server has written it: the
		// pipe then holds bytes while the host does not read.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err := s.WaitWriterBlocked(ctx)
		if err == nil {
			t.Fatalf("WaitWriterBlocked succeeded for a server that is not blocked: %s", s.Stats().WriterEvidence)
		}
		s.ResumeReads()
		if _, err := p.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWaitWriterBlockedNotBlocked: when its bound runs out, WaitWriterBlocked
// says what the stdout pipe did over the wait: still filling (a server
// pacing 100-byte writes every 5ms) or unchanged (one that wrote 500 bytes
// and went idle). Each server writes first once the host's reads are
// stalled, and the test waits for that write before the wait.
func TestWaitWriterBlockedNotBlocked(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stdout pipe's fill level needs Linux FIONREAD")
	}
	t.Parallel()
	for _, tt := range []struct {
		name  string
		paced bool
		want  string
	}{
		{"filling", true, `^after [\d.]+m?s the stdout pipe held \d+/16384 bytes, filling at [\d.]+ KB/s, full at that rate in about [\d.]+m?s; the server unverified \(its threads cannot be seen here\): over \d+ms it took 0 bytes from stdin \(0 waiting in the pipe\) and wrote \d+ bytes to stdout$`},
		{"idle", false, `^after [\d.]+m?s the stdout pipe held 500/16384 bytes; the server unverified \(its threads cannot be seen here\): over \d+ms it took 0 bytes from stdin \(0 waiting in the pipe\) and wrote 0 bytes to stdout$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stalled, wrote := make(chan struct{}), make(chan struct{})
			s := mcptest.StartServer(t, mcptest.InProcess(func(ctx context.Context, _ io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
				chunk := bytes.Repeat([]byte("x"), 100)
				if !tt.paced {
					chunk = bytes.Repeat([]byte("x"), 500)
				}
				select { // the first write only once the host's reads are stalled
				case <-stalled:
				case <-ctx.Done():
					return nil
				}
				if _, err := out.Write(chunk); err != nil {
					return err
				}
				close(wrote)
				if !tt.paced {
					<-ctx.Done()
					return nil
				}
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return nil
					case <-tick.C:
					}
					if _, err := out.Write(chunk); err != nil {
						return err
					}
				}
			}), mcptest.WithoutHandshake(), mcptest.WithPipeCapacity(16384))
			s.StallReads()
			close(stalled)
			<-wrote
			ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
			defer cancel()
			err := s.WaitWriterBlocked(ctx)
			var nb *mcptest.NotBlockedError
			var we *mcptest.WaitError
			if !errors.As(err, &nb) || !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("WaitWriterBlocked = %v, want a *NotBlockedError wrapping a *WaitError and the deadline", err)
			}
			if !regexp.MustCompile(tt.want).MatchString(nb.Summary()) {
				t.Errorf("Summary = %q, want %q", nb.Summary(), tt.want)
			}
			if !strings.Contains(err.Error(), nb.Summary()) {
				t.Errorf("the error does not give the summary: %v", err)
			}
			if a := nb.Activity; tt.paced != (a.StdoutWritten > 0) || a.StdoutWritten < 0 {
				t.Errorf("Activity.StdoutWritten = %d; want above 0 only for the paced writer", a.StdoutWritten)
			}
			if a := nb.Activity; !nb.Stalled || nb.Capacity != 16384 || a.Known || a.Stopped || a.Demand != -1 {
				t.Errorf("Stalled %v, Capacity %d, Activity %+v; want true, 16384 and nothing known of the threads (in-process)", nb.Stalled, nb.Capacity, a)
			}
		})
	}
}

func init() {
	mcptest.RegisterHelper("env", func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
		dir, _ := os.Getwd()
		fmt.Fprintf(errw, "MCPTEST_TEST_VALUE=%s in %s\n", os.Getenv("MCPTEST_TEST_VALUE"), dir)
		return testserver.New(nil, true)(ctx, in, out, errw)
	})
}

// TestCommandFunc: each server the target starts is a new command from
// build, with the environment and working directory build gave it.
func TestCommandFunc(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	builds := 0
	target := mcptest.CommandFunc(func() *exec.Cmd {
		builds++
		cmd, err := mcptest.HelperCommand(context.Background(), "env")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, fmt.Sprintf("MCPTEST_TEST_VALUE=v%d", builds))
		cmd.Dir = dir
		return cmd
	})
	for i := 2; i <= 3; i++ {
		s := mcptest.StartServer(t, target)
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("MCPTEST_TEST_VALUE=v%d in %s\n", i, dir); !strings.Contains(string(s.Stderr()), want) {
			t.Errorf("server %d: stderr %q, want %q", i-1, s.Stderr(), want)
		}
	}
	if builds != 3 {
		t.Errorf("build called %d times, want 3 (once to describe the target, once per server)", builds)
	}
}
