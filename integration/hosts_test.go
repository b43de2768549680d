package integration_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/integration"
)

// hostConfig sizes the host criteria to be quick under -race: a 1 MiB huge
// field, 2000 blocks, 8 MiB of stderr (128 times the 64 KiB stderr pipe).
func hostConfig(maxFrame int) assertions.HostConfig {
	return assertions.HostConfig{
		MaxFrame:    maxFrame,
		Within:      5 * time.Second,
		HugeField:   1 << 20,
		Blocks:      2000,
		StderrNoise: 8 << 20,
		Run:         adapterCriteria(),
	}
}

// probeFrame is the transport limit the limit criteria are run with: small,
// because a frame at the official Go SDK's real limit of 16 MiB takes more
// than 30s to go through a client under -race.
const probeFrame = 1 << 20

// hostProbeOnly are the host criteria judged on these clients through
// mcpstdio hostprobe, as command-line hosts with their own timeouts
// (hostprobe_test.go), not through their Go adapters here.
// handshake-timeout is among them: neither SDK bounds Connect by itself
// (measured: each was still waiting at the cap), which through an adapter
// would wait out HostConfig.Cap. shutdown-ladder runs here: each SDK's
// Close is the ladder (GOSDK mcp/cmd.go pipeRWC.Close: stdin, 5 s, SIGTERM,
// 5 s, SIGKILL; MCPGO client/transport/stdio.go Close: stdin, 2 s, SIGTERM,
// 3 s, SIGKILL).
var hostProbeOnly = []string{"host-timeout", "progress-forever", "late-after-cancel", "crash-mid-call", "stdin-not-read", "large-tools-list", "handshake-timeout"}

// adapterCriteria selects the host criteria run through the adapters,
// except those named.
func adapterCriteria(except ...string) *regexp.Regexp {
	return allBut(assertions.HostCriterionNames(), append(slices.Clone(hostProbeOnly), except...)...)
}

func allHostPass() map[string]assertions.Verdict {
	m := map[string]assertions.Verdict{}
	for _, n := range assertions.HostCriterionNames() {
		if !slices.Contains(hostProbeOnly, n) {
			m[n] = assertions.Pass
		}
	}
	return m
}

// goSDKHostVerdicts is what the host criteria say about a client of the
// official Go SDK v1.8.0. See servers_test.go for the GOSDK and MCPGO source
// references.
func goSDKHostVerdicts() map[string]assertions.Verdict {
	want := allHostPass()
	// The SDK reads stdout with a json.Decoder over the whole stream
	// (GOSDK mcp/transport.go:524-549), not line by line. The fake's
	// invalid line is a truncated object ending in `"data":` and a
	// newline; the decoder takes the newline for whitespace and the
	// next line, the response to server/discover, for the value of
	// "data", then waits for the rest of the object forever. Connect
	// has no bound of its own (GOSDK mcp/client.go:320-330) and hangs
	// until the battery gives up: the host never gets ready.
	want["invalid-json-response"] = assertions.Fail
	// A banner line on stdout is a decode error, which ends the read
	// loop (GOSDK internal/jsonrpc2/conn.go:517-519): the session is
	// closed and Connect fails with "invalid character 'k' in literal
	// false".
	want["junk-on-stdout"] = assertions.Fail
	// A frame over the limit is errFrameTooLarge (GOSDK
	// mcp/transport.go:562-579), a bounded error for the call; it also ends
	// the session, which the criterion accepts ("the host then reported the
	// session ended").
	want["over-limit"] = assertions.Pass
	// A call abandoned by its context returns at once and its
	// notifications/cancelled goes out on a goroutine (GOSDK
	// mcp/transport.go:311-321), which blocks on the fake's full stdin
	// pipe; Close then waits for that write (GOSDK
	// internal/jsonrpc2/conn.go:504-508: the connection closes its pipes
	// only once no notification is in flight), and the write for the fake
	// to read: it returns only when the criterion kills the fake.
	want["close-bounded"] = assertions.Fail
	return want
}

// mcpGoHostVerdicts is what the host criteria say about a client of mcp-go
// v1.6.0.
func mcpGoHostVerdicts() map[string]assertions.Verdict {
	want := allHostPass()
	// mcp-go's client has no transport limit: it reads stdout with
	// bufio.Reader.ReadString('\n') and json.Unmarshal on the whole line
	// (MCPGO client/transport/stdio.go:535-553), so a frame of any size is
	// buffered and parsed. probeFrame is only the size the criterion
	// tries; it would pass any size that fits memory.
	want["over-limit"] = assertions.Fail
	return want
}

// only returns the verdicts of want for the criteria cfg.Run selects.
func only(want map[string]assertions.Verdict, cfg assertions.HostConfig) map[string]assertions.Verdict {
	out := map[string]assertions.Verdict{}
	for k, v := range want {
		if cfg.Run == nil || cfg.Run.MatchString(k) {
			out[k] = v
		}
	}
	return out
}

// TestHostVerdicts runs the host criteria against clients built with each
// SDK and compares every verdict with the one observed for this SDK version.
func TestHostVerdicts(t *testing.T) {
	t.Run("go-sdk", func(t *testing.T) {
		t.Parallel()
		// mcp.CommandTransport, as applications use it. Its limit is fixed
		// at 16 MiB (GOSDK mcp/cmd.go:46, transport.go:493-495): the limit
		// criteria run below with the same framer set to probeFrame.
		cfg := hostConfig(0)
		cfg.Run = adapterCriteria("under-limit", "over-limit")
		checkHost(t, integration.GoSDKHost, cfg, only(goSDKHostVerdicts(), cfg))
	})
	t.Run("go-sdk/limit", func(t *testing.T) {
		t.Parallel()
		cfg := hostConfig(probeFrame)
		cfg.Run = regexp.MustCompile(`^(?:under|over)-limit$`)
		checkHost(t, integration.GoSDKIOHost(probeFrame), cfg, only(goSDKHostVerdicts(), cfg))
	})
	t.Run("mcp-go", func(t *testing.T) {
		t.Parallel()
		checkHost(t, integration.MCPGoHost, hostConfig(probeFrame), mcpGoHostVerdicts())
	})
}

func checkHost(t *testing.T, h assertions.HostFactory, cfg assertions.HostConfig, want map[string]assertions.Verdict) {
	t.Helper()
	rep := assertions.CheckHost(t.Context(), h, cfg)
	if diff := cmp.Diff(want, rep.Verdicts()); diff != "" {
		t.Errorf("CheckHost verdicts mismatch (-want +got):\n%s\nreport:\n%s", diff, rep)
	}
	for _, res := range rep.Results {
		if res.Verdict != assertions.Pass {
			t.Logf("%s %s: %s", res.Verdict, res.Name, res.Evidence)
		}
	}
}
