package mcpstdio_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// The tests and examples of this file are the README's snippets: each
// ```go block of README.md and docs/*.md names the file that holds it on its
// first line, and TestMarkdownSnippets checks that the rest appears here
// verbatim (modulo indentation).

// TestMain serves the fake as a child process for the host criteria and
// checks for leaked goroutines. (Your own is `mcptest.Main(m)`; the
// library's tests add goleak.Cleanup(testkit.Exit), which skips the race
// detector's one-second sleep at the exit of a passing run.)
func TestMain(m *testing.M) { mcptest.Main(m, goleak.Cleanup(testkit.Exit)) }

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs()) // the flags of `mcpstdio fake`
	})
}

// myServer stands in for your server's Target, such as
// mcptest.GoBuild(t, "./cmd/myserver"): the fake as a child of the test
// binary, correct, or with its naive single-goroutine loop when
// MCPSTDIO_EXAMPLE_SERVER=naive (as TestFirstTestFailsOnTheNaiveLoop runs it).
func myServer(t *testing.T) mcptest.Target {
	t.Helper()
	if os.Getenv("MCPSTDIO_EXAMPLE_SERVER") == "naive" {
		return mcptest.Helper("fake", "-naive")
	}
	return mcptest.Helper("fake")
}

func TestReadsWhileBlocked(t *testing.T) {
	s := mcptest.StartServer(t, myServer(t), mcptest.WithPipeCapacity(16<<10), mcptest.WithTimeout(2*time.Second))
	assertions.AssertReadsWhileBlocked(t, s, assertions.ServerConfig{
		Large:  &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}}, // far larger than the pipe
		Within: 2 * time.Second,                                                                // as WithTimeout
	})
}

func TestReleaseCriteria(t *testing.T) {
	assertions.ServerCriteria(t, myServer(t), assertions.ServerConfig{
		Large:  &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}},
		Slow:   &assertions.ToolCall{Name: "slow", Arguments: map[string]any{"steps": 100000, "intervalMs": 10}},
		Within: 2 * time.Second,
		Run:    regexp.MustCompile(`^(stdout-clean|cancel-during-work|result-bounded)$`), // without Run, all
		Expect: map[string]assertions.Verdict{"result-bounded": assertions.Skip},         // no Bounded call given
	})
}

// TestFirstTestFailsOnTheNaiveLoop runs TestReadsWhileBlocked, the README's
// first test, against the naive fake in a child of this test binary, and
// checks that it fails there for the reason it is for (against the good
// fake it runs, and passes, as a test of its own).
func TestFirstTestFailsOnTheNaiveLoop(t *testing.T) {
	t.Parallel() // it waits, in a child, for the naive fake to be seen stopped
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestReadsWhileBlocked$", "-test.v", "-test.count", "1")
	cmd.Env = append(os.Environ(), "MCPSTDIO_EXAMPLE_SERVER=naive")
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("TestReadsWhileBlocked against the naive fake: err = %v (context: %v), want a failed test; output:\n%s", err, ctx.Err(), out)
	}
	for _, want := range []string{"--- FAIL: TestReadsWhileBlocked", "the server stopped reading stdin", "waiting in the pipe", "while its stdout was blocked"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("TestReadsWhileBlocked against the naive fake: output lacks %q:\n%s", want, out)
		}
	}
}

// Example checks the bug this library is about: while its stdout is
// blocked, does the server still read stdin? The naive loop (it reads stdin
// only between writes) does not; the fake's correct core does.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, naive := range []bool{true, false} {
		srv := fakeserver.New(fakeserver.Faults{NaiveLoop: naive}) // stands in for your server
		s, err := mcptest.Start(ctx, mcptest.InProcess(srv.Serve), mcptest.WithPipeCapacity(16<<10), mcptest.WithTimeout(time.Second))
		if err != nil {
			fmt.Println(err)
			return
		}
		res := assertions.CheckReadsWhileBlocked(ctx, s, assertions.ServerConfig{
			Large:  &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}},
			Within: time.Second, // as WithTimeout: the naive loop fails after two
		})
		fmt.Printf("naive=%v: %s\n", naive, res.Verdict)
		s.Close()
	}
	// Output:
	// naive=true: fail
	// naive=false: pass
}

// Example_stallCancelRecover is the back-pressure scenario step by step: the
// host stops reading, the server blocks writing a large result, the host
// cancels it and resumes, and a second request completes. The naive loop
// passes this one (its blocked write finishes once the host reads again, and
// then it reads the cancel): it is Example's check that catches it.
func Example_stallCancelRecover() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := fakeserver.New(fakeserver.Faults{NaiveLoop: true})
	s, err := mcptest.Start(ctx, mcptest.InProcess(srv.Serve), mcptest.WithPipeCapacity(16<<10))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	s.StallReads() // the host is busy: nothing leaves the stdout pipe
	big := s.Send(wire.MethodToolsCall, map[string]any{"name": "big", "arguments": map[string]any{"bytes": 1 << 20}})
	if err := s.WaitWriterBlocked(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("server blocked writing stdout")
	big.Cancel("result exceeded the client budget")
	s.ResumeReads()
	res := assertions.CheckSecondRequestCompletes(ctx, s, 5*time.Second)
	fmt.Println(res.Verdict)
	// Output:
	// server blocked writing stdout
	// pass
}

func TestHostCriteria(t *testing.T) {
	assertions.HostCriteria(t, assertions.SessionHost(mcptest.WithMaxFrame(1<<20), mcptest.WithTimeout(2*time.Second)), assertions.HostConfig{
		MaxFrame: 1 << 20, // the host's transport limit
		Run:      regexp.MustCompile(`^(over-limit|junk-on-stdout)$`),
	})
}
