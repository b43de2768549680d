//go:build linux

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// The agent CLIs run through `mcpstdio hostprobe` offline, with no model,
// login or key: each is installed from its lockfile in agents/<name>
// (`npm ci`), gets a HOME, XDG directories and TMPDIR of its own under the
// test's temporary directory, and reads the fake from a config file written
// there by -config. Codex calls tools through its app server
// (cmd/codexhost); the others only connect and list tools without a model,
// so the criteria that need a tool call are not run for them (agentCallCriteria,
// "skip" in docs/hosts.md). The verdicts are the ones measured by hand for
// the pinned versions (docs/hosts.md, "Agent CLIs"); this test asserts them
// and checks that table. Codex, Claude Code and opencode run whenever they
// are installed; hostprobe cannot run Gemini CLI and Qwen Code yet (see
// notRunYet), and TestAgentsConnectOnlyRaw checks their facts instead.

// agentCallCriteria are the host criteria that need the host to call a
// tool.
var agentCallCriteria = []string{"huge-field", "many-blocks", "cancel-during-output", "idle-notifications",
	"host-timeout", "progress-forever", "late-after-cancel", "crash-mid-call", "stdin-not-read"}

// agent is an agent CLI as hostprobe runs it, with its row of docs/hosts.md.
type agent struct {
	name, title string
	bin         string            // its command, in agents/NAME/node_modules
	args        []string          // after bin
	configs     map[string]string // template in agents/NAME -> path under HOME
	env         []string          // more environment; {home} is the run's HOME
	connected   string            // the line of its output that says the server connected
	calls       bool              // it calls tools without a model
	list        []string          // args for large-tools-list, if not args
	listExpect  string            // -expect-output for large-tools-list
	notRunYet   string            // why hostprobe does not run it yet
	want        map[string]agentCell
}

// agentCell is a criterion's cell in an agent's table: the verdicts the
// test accepts and the key fact, measured by hand.
type agentCell struct {
	verdicts []assertions.Verdict
	fact     string
}

func cell(v assertions.Verdict, fact string) agentCell {
	return agentCell{[]assertions.Verdict{v}, fact}
}

// connectOnly fills in the cells of the criteria a CLI that calls tools
// only through a model cannot show.
func connectOnly(want map[string]agentCell) map[string]agentCell {
	for _, n := range agentCallCriteria {
		want[n] = cell(assertions.Skip, "needs a tool call: it calls tools only through a model")
	}
	return want
}

var agents = []agent{
	{name: "codex", title: "Codex 0.171.0 (`@openai/codex`, `codex app-server` driven by `integration/cmd/codexhost`, `tool_timeout_sec = 5`)",
		bin: ".bin/codex", calls: true, list: []string{"-list"}, listExpect: `filler-0283`,
		want: map[string]agentCell{
			"under-limit":           cell(assertions.Skip, "no -max-frame"),
			"over-limit":            cell(assertions.Skip, "no -max-frame"),
			"huge-field":            cell(assertions.Pass, "1 MiB field taken"),
			"many-blocks":           cell(assertions.Pass, "2000 blocks taken"),
			"invalid-json-response": cell(assertions.Pass, "call works"),
			"stderr-noise":          cell(assertions.Pass, "8 MiB drained"),
			"junk-on-stdout":        cell(assertions.Pass, "call works"),
			"cancel-during-output":  cell(assertions.Skip, "a command cancels only on its own"),
			"idle-notifications":    cell(assertions.Skip, "one call, then it ends"),
			"era-legacy":            cell(assertions.Pass, "initialize 2025-06-18"),
			"era-modern":            cell(assertions.Fail, "speaks only initialize: -32022 from a modern-only server"),
			"host-timeout":          cell(assertions.Pass, "gives up at 5 s (`tool_timeout_sec`), sends `notifications/cancelled`; with no setting it waited over 200 s"),
			"progress-forever":      cell(assertions.Pass, "5 s, progress does not reset it; cancels"),
			"late-after-cancel":     cell(assertions.Pass, "late answer ignored"),
			"crash-mid-call":        cell(assertions.Pass, "\"Transport closed\" within ~1 s, no restart"),
			"stdin-not-read":        cell(assertions.Pass, "30 s (`startup_timeout_sec`): \"timed out awaiting tools/list\""),
			"large-tools-list":      cell(assertions.Pass, "all 300 KB of tools taken; over 2048 tools: rejected, \"tools/list exceeded the catalog limit of 2048 items\""),
			// Codex closes stdin and sends SIGTERM within a few ms of each
			// other, in either order (the fake saw stdin first, the raw
			// server SIGTERM first): warn when SIGTERM came first.
			"shutdown-ladder":   {[]assertions.Verdict{assertions.Pass, assertions.Warn}, "stdin close and SIGTERM within 5 ms, either first; SIGKILL ~25 ms later; no orphan"},
			"handshake-timeout": cell(assertions.Warn, "30 s (`startup_timeout_sec`), SIGKILL, no cancel; the call's error says \"timed out handshaking\""),
		}},
	{name: "claude", title: "Claude Code 2.1.332 (`@anthropic-ai/claude-code`, `claude mcp get fake`)",
		bin: ".bin/claude", args: []string{"mcp", "get", "fake"}, configs: map[string]string{"claude.json.tmpl": ".claude.json"},
		connected: `✔ Connected`,
		want: connectOnly(map[string]agentCell{
			"under-limit":           cell(assertions.Skip, "no -max-frame"),
			"over-limit":            cell(assertions.Skip, "no -max-frame"),
			"invalid-json-response": cell(assertions.Pass, "connected"),
			"stderr-noise":          cell(assertions.Pass, "8 MiB drained, connected"),
			"junk-on-stdout":        cell(assertions.Pass, "connected"),
			"era-legacy":            cell(assertions.Pass, "`server/discover` probe, then initialize 2025-11-25"),
			"era-modern":            cell(assertions.Pass, "`server/discover` (2026-07-28)"),
			"large-tools-list":      cell(assertions.Warn, "tools/list taken; `mcp get` prints no tools, so whether all were kept is not known"),
			"shutdown-ladder":       cell(assertions.Warn, "SIGINT, SIGTERM 0.1 s later, then SIGKILL; stdin not closed first; no orphan"),
			"handshake-timeout":     cell(assertions.Warn, "30 s (2.5 s of it on the `server/discover` probe), no cancel; exits 0 with \"Failed to connect\""),
		})},
	{name: "opencode", title: "opencode 1.18.33 (`opencode-ai`, `opencode mcp list`)",
		bin: "opencode-linux-x64/bin/opencode", args: []string{"mcp", "list"}, configs: map[string]string{"opencode.json.tmpl": "opencode.json"},
		env: []string{"OPENCODE_CONFIG={home}/opencode.json"}, connected: `✓ fake`,
		want: connectOnly(map[string]agentCell{
			"under-limit":           cell(assertions.Skip, "no -max-frame"),
			"over-limit":            cell(assertions.Skip, "no -max-frame"),
			"invalid-json-response": cell(assertions.Pass, "connected"),
			"stderr-noise":          cell(assertions.Pass, "8 MiB drained, connected"),
			"junk-on-stdout":        cell(assertions.Pass, "connected"),
			"era-legacy":            cell(assertions.Pass, "initialize 2025-11-25"),
			"era-modern":            cell(assertions.Fail, "speaks only initialize"),
			"large-tools-list":      cell(assertions.Warn, "tools/list taken; `mcp list` prints no tools, so whether all were kept is not known"),
			"shutdown-ladder":       cell(assertions.Pass, "stdin close, SIGTERM 2.0 s later, then SIGKILL; no orphan"),
			"handshake-timeout":     cell(assertions.Warn, "30 s, no cancel; exits 0 with \"Operation timed out after 30000ms\""),
		})},
	{name: "gemini", title: "Gemini CLI 0.61.0 (`@google/gemini-cli`, `gemini mcp list`)",
		notRunYet: "`gemini mcp list` sends initialize and ping, never tools/list, and hostprobe's first run needs a tools/list or tools/call; `gemini -p` needs a key"},
	{name: "qwen", title: "Qwen Code 0.24.4 (`@qwen-code/qwen-code`, Node 22)",
		notRunYet: "`qwen mcp list` sends initialize only, never tools/list, which hostprobe's first run needs; `qwen -p hi` lists tools but always exits 1 (\"No auth type is selected\"), so its exit status says nothing of the server"},
}

// agentsBuilt holds codexhost, built once.
var agentsBuilt struct {
	once      sync.Once
	codexhost string
	err       error
}

func buildCodexHost(t *testing.T) string {
	t.Helper()
	agentsBuilt.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpstdio-codexhost-")
		if err != nil {
			agentsBuilt.err = err
			return
		}
		agentsBuilt.codexhost = filepath.Join(dir, "codexhost")
		if b, err := exec.Command("go", "build", "-o", agentsBuilt.codexhost, "./cmd/codexhost").CombinedOutput(); err != nil {
			agentsBuilt.err = fmt.Errorf("go build ./cmd/codexhost: %v\n%s", err, b)
		}
	})
	if agentsBuilt.err != nil {
		t.Fatal(agentsBuilt.err)
	}
	return agentsBuilt.codexhost
}

func TestHostProbeAgents(t *testing.T) {
	mcpstdio, _ := buildHostBinaries(t)
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			if a.notRunYet != "" {
				t.Skipf("%s is not run by hostprobe yet: %s", a.title, a.notRunYet)
			}
			dir, err := filepath.Abs(filepath.Join("agents", a.name))
			if err != nil {
				t.Fatal(err)
			}
			modules := filepath.Join(dir, "node_modules")
			if _, err := os.Stat(filepath.Join(modules, a.bin)); err != nil {
				t.Skipf("%s needs `npm ci` in integration/agents/%s: %v", a.title, a.name, err)
			}
			t.Parallel()
			// The CLIs exit 0 whether or not the server connected; its
			// "connected" line in the output becomes the exit status.
			host := slices.Concat([]string{"sh", "-c", connectedScript, "sh", a.connected, filepath.Join(modules, a.bin)}, a.args)
			list := host
			if a.calls {
				host = []string{buildCodexHost(t), "-codex", filepath.Join(modules, a.bin), "-tool-timeout", "5s", "--", "{server}"}
				list = slices.Concat(host[:3], a.list, host[3:])
			}
			var runs [][]string
			var rest []string
			for _, n := range assertions.HostCriterionNames() {
				switch {
				case n == "large-tools-list" || !a.calls && slices.Contains(agentCallCriteria, n):
				case a.calls && slices.Contains(capCriteria, n):
					runs = append(runs, []string{"-run", "^" + n + "$", "-host-cap", "60s"})
				default:
					rest = append(rest, n)
				}
			}
			runs = append(runs, []string{"-run", "^(" + strings.Join(rest, "|") + ")$"})
			got := map[string]assertions.Result{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			probe := func(args []string, host []string) {
				defer wg.Done()
				rep := agentProbe(t, mcpstdio, a, args, host)
				mu.Lock()
				defer mu.Unlock()
				for _, r := range rep.Results {
					got[r.Name] = r
					t.Logf("%s: %s", a.name, r.Line())
				}
			}
			for _, run := range runs {
				wg.Add(1)
				go probe(run, host)
			}
			// large-tools-list: only a listing the host prints can show that
			// it kept every tool; without one the verdict says so.
			listRun := []string{"-run", "^large-tools-list$"}
			if a.listExpect != "" {
				listRun = append(listRun, "-expect-output", a.listExpect)
			}
			wg.Add(1)
			go probe(listRun, list)
			wg.Wait()
			for _, n := range assertions.HostCriterionNames() {
				c, ok := a.want[n]
				if !ok {
					t.Errorf("%s: no verdict measured for %s", a.name, n)
					continue
				}
				if !a.calls && slices.Contains(agentCallCriteria, n) {
					if _, ran := got[n]; ran {
						t.Errorf("%s: %s ran, but it needs a tool call", a.name, n)
					}
					continue
				}
				if r := got[n]; !slices.Contains(c.verdicts, r.Verdict) {
					t.Errorf("%s: %s got %q (%s), want one of %q (measured by hand: %s)", a.name, n, r.Verdict, r.Evidence, c.verdicts, c.fact)
				}
			}
		})
	}
}

// connectedScript runs "$@" (after $1), prints its output, and exits 0
// only if the command did and its output has the line $1.
const connectedScript = `want=$1; shift; out=$("$@" 2>&1); s=$?; printf '%s\n' "$out"; [ $s -eq 0 ] || exit $s; printf '%s\n' "$out" | grep -qF -- "$want" || { echo "no line with: $want" >&2; exit 1; }`

// agentProbe runs mcpstdio hostprobe -json against an agent, in a process
// group of its own with a HOME, XDG directories and TMPDIR under a
// temporary directory of its own, and returns its report. After hostprobe
// exits, every process that still names that directory (in its command
// line or environment: the CLI, its children, the fake) is an error, and
// is killed.
func agentProbe(t *testing.T, mcpstdio string, a agent, args, host []string) *assertions.Report {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	env := os.Environ()
	for _, kv := range [][2]string{{"HOME", ""}, {"XDG_CONFIG_HOME", ".config"}, {"XDG_DATA_HOME", ".local/share"},
		{"XDG_CACHE_HOME", ".cache"}, {"XDG_STATE_HOME", ".local/state"}, {"TMPDIR", "tmp"}} {
		p := filepath.Join(home, kv[1])
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, kv[0]+"="+p)
	}
	for _, e := range a.env {
		env = append(env, strings.ReplaceAll(e, "{home}", home))
	}
	args = slices.Clone(args)
	for tmpl, path := range a.configs {
		args = append(args, "-config", filepath.Join("agents", a.name, tmpl)+"="+filepath.Join(home, path))
	}
	args = slices.Concat([]string{"hostprobe", "-json", "-within", "30s", "-start-timeout", "2m"}, smallPayloads, args, []string{"--"}, host)
	// Bound: the start, then per criterion its steps and the cap.
	bound := 2*time.Minute + time.Duration(len(assertions.HostCriterionNames()))*(60*time.Second+3*30*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcpstdio, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of its group
	if left := leftovers(root, 15*time.Second); len(left) > 0 {
		t.Errorf("hostprobe %s: processes left running after it exited (killed now): %s", strings.Join(args, " "), strings.Join(left, "; "))
	}
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("mcpstdio %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rep assertions.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("mcpstdio %s: the -json report: %v\n%s\n%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.String())
	}
	return &rep
}

// leftovers waits at most bound for every process that names dir in its
// command line or environment to end, then kills those still running and
// returns their pids and command lines.
func leftovers(dir string, bound time.Duration) []string {
	find := func() map[int]string {
		found := map[int]string{}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			var pid int
			if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
				continue
			}
			p := filepath.Join("/proc", e.Name())
			cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			environ, _ := os.ReadFile(filepath.Join(p, "environ"))
			stat, _ := os.ReadFile(filepath.Join(p, "stat"))
			if _, after, ok := bytes.Cut(stat, []byte(") ")); ok && bytes.HasPrefix(after, []byte("Z")) {
				continue // a zombie: ended, its parent has not reaped it yet
			}
			if bytes.Contains(cmdline, []byte(dir)) || bytes.Contains(environ, []byte(dir)) {
				found[pid] = string(bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '}))
			}
		}
		return found
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		found := find()
		if len(found) == 0 {
			return nil
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		}
		var left []string
		for pid, c := range found {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			left = append(left, fmt.Sprintf("pid %d: %.200s", pid, c))
		}
		slices.Sort(left)
		return left
	}
}

// agentTable is an agent's verdict table as docs/hosts.md has it: a row per
// host criterion, its verdicts and the key fact.
func agentTable(a agent) string {
	var b strings.Builder
	b.WriteString("### " + a.title + "\n\n| criterion | verdict | key fact |\n|---|---|---|\n")
	for _, n := range assertions.HostCriterionNames() {
		c := a.want[n]
		var vs []string
		for _, v := range c.verdicts {
			vs = append(vs, string(v))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", n, strings.Join(vs, " or "), c.fact)
	}
	return b.String()
}

// TestHostsAgentTables checks the agents' verdict tables in docs/hosts.md
// against the verdicts TestHostProbeAgents asserts, with their key facts.
func TestHostsAgentTables(t *testing.T) {
	b, err := os.ReadFile("../docs/hosts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, a := range agents {
		heading := "### " + a.title + "\n"
		if a.notRunYet != "" {
			if strings.Contains(doc, heading) {
				t.Errorf("docs/hosts.md has a verdict table for %s, which hostprobe does not run yet", a.name)
			}
			continue
		}
		want := agentTable(a)
		if !strings.Contains(doc, want) {
			t.Errorf("docs/hosts.md's table for %s is not what the tests assert; want:\n%s", a.name, want)
		}
	}
}
