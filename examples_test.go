package mcpstdio_test

import (
	"context"
	"fmt"
	"io"
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

// TestMain serves the fake as a child process for the host criteria and
// checks for leaked goroutines. (Your own is `mcptest.Main(m)`; the
// library's tests add goleak.Cleanup(testkit.Exit), which skips the race
// detector's one-second sleep at the exit of a passing run.)
func TestMain(m *testing.M) { mcptest.Main(m, goleak.Cleanup(testkit.Exit)) }

// The reproduction every server should survive: the host stops reading,
// the server blocks writing a large result, the host cancels it and resumes,
// and a second request must still complete. In a test, use
// mcptest.StartServer(t, mcptest.Command("./myserver")) and the Assert…
// forms of the checks.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := fakeserver.New() // stands in for your server
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

// CheckServer runs the server release criteria, each against a fresh
// server, and reports a verdict per criterion. Here the server is the fake
// with its naive single-goroutine loop: the criteria catch it.
func Example_serverCriteria() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A Target is started once per criterion: make a fresh server each time.
	naive := mcptest.InProcess(func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		return fakeserver.New(fakeserver.Faults{NaiveLoop: true}).Serve(ctx, stdin, stdout, stderr)
	})
	rep := assertions.CheckServer(ctx, naive, assertions.ServerConfig{
		Large:            &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 256 << 10}},
		Slow:             &assertions.ToolCall{Name: "slow", Arguments: map[string]any{"steps": 100000, "intervalMs": 10}},
		OversizedRequest: 1 << 20,
		Within:           2 * time.Second,
	})
	for _, res := range rep.Results {
		if res.Verdict != assertions.Pass {
			fmt.Println(res.Verdict, res.Name)
		}
	}
	// Output:
	// fail reads-while-blocked
	// fail cancel-before-work
	// fail cancel-during-work
	// skip shutdown-sigterm
	// skip result-bounded
}

// CheckHost runs the host release criteria against a host: here this
// library's own, mcptest.Session, adapted by SessionHost, with its own
// timeout (WithTimeout) of 2 s, which host-timeout and its kin measure. For
// your host, write a HostFactory that starts your client on the command it
// is given (or give a host in any language to CheckHostCommand).
func Example_hostCriteria() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const limit = 1 << 20
	host := assertions.SessionHost(mcptest.WithMaxFrame(limit), mcptest.WithTimeout(2*time.Second))
	rep := assertions.CheckHost(ctx, host, assertions.HostConfig{MaxFrame: limit, HugeField: 1 << 20, StderrNoise: 8 << 20})
	fmt.Println(strings.Join(assertions.HostCriterionNames(), " "))
	fmt.Println(rep.Count(assertions.Pass), "passed,", rep.Count(assertions.Fail), "failed")
	for _, res := range rep.Results {
		if res.Verdict != assertions.Pass {
			fmt.Println(res.Verdict, res.Name+":", res.Evidence)
		}
	}
	// Output:
	// under-limit over-limit huge-field many-blocks invalid-json-response stderr-noise junk-on-stdout cancel-during-output idle-notifications era-legacy era-modern host-timeout progress-forever late-after-cancel crash-mid-call stdin-not-read large-tools-list
	// 17 passed, 0 failed
}
