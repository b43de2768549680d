package assertions

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/internal/child"
	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// What a host command leaves behind (processes that escaped with setsid, and
// the orphans of shutdown-ladder): the processes of its run still running
// when it exits are facts the criteria report, never a reason for every
// criterion to fail. A run's processes are the fakes it started (by their
// reports' pids) and whatever carries the run's marker in its environment; on
// Linux they are found in /proc, elsewhere not at all.

// runMarker is the environment variable that marks a host command's run,
// inherited by the fakes and whatever else it starts.
const runMarker = "MCPSTDIO_HOST_RUN"

// holdGrace is how long a host's output may stay open after it exits
// before the processes holding it are ended.
const holdGrace = 2 * time.Second

// leftProc is a process found running after the host exited.
type leftProc struct {
	id      proc.ID
	cmdline string
}

func describe(ps []leftProc) string {
	var b []string
	for _, p := range ps {
		b = append(b, fmt.Sprintf("pid %d (%s)", p.id.PID, truncate(p.cmdline, 80)))
	}
	return strings.Join(b, ", ")
}

// leftBehind is the error of a fixture's close that found processes to
// end: the runner adds it to the criterion's evidence.
type leftBehind string

func (e leftBehind) Error() string { return string(e) }

// fakeIDs returns the running fakes of the fixture, by the pids their
// reports name (each written while its fake ran).
func (r *hostFixture) fakeIDs() []leftProc {
	var out []leftProc
	for _, f := range r.reportFiles() {
		rep, err := fakeserver.ReadReportFile(f)
		if err != nil || rep.PID <= 0 {
			continue
		}
		if id, ok := proc.Identify(rep.PID); ok && id.Running() {
			out = append(out, leftProc{id, proc.CommandLine(rep.PID)})
		}
	}
	return out
}

// leftRunning returns what of run still runs when the host has exited.
func (r *hostFixture) leftRunning(run *commandRun) []leftProc {
	out := r.fakeIDs()
	for _, id := range proc.Find(nil, run.marker) {
		if !slices.ContainsFunc(out, func(p leftProc) bool { return p.id == id }) {
			out = append(out, leftProc{id, proc.CommandLine(id.PID)})
		}
	}
	return out
}

// endHolders waits holdGrace for the host's output to close once the host
// has exited (copied); if something still holds it, it ends those
// processes and returns them.
func endHolders(pr *os.File, copied <-chan struct{}) []leftProc {
	if bound.Wait(copied, holdGrace) {
		return nil
	}
	var held []leftProc
	for _, id := range proc.Find(pr, "") {
		held = append(held, leftProc{id, proc.CommandLine(id.PID)})
	}
	end(held)
	bound.Wait(copied, holdGrace)
	return held
}

// endMarked ends the processes that carry marker outside the process
// group group (which the caller has killed) and returns them.
func endMarked(marker string, group int) []leftProc {
	var left []leftProc
	for _, id := range proc.Find(nil, marker) {
		if g := id.Group(); g != 0 && g != group {
			left = append(left, leftProc{id, proc.CommandLine(id.PID)})
		}
	}
	end(left)
	return left
}

// end kills ps and waits, at most holdGrace, for them to be gone.
func end(ps []leftProc) {
	for _, p := range ps {
		killPID(p.id.PID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), holdGrace)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for slices.ContainsFunc(ps, func(p leftProc) bool { return p.id.Running() }) {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// leftNote says what a host command's run left behind: what held its
// output after it exited, what else of its run the criterion ended outside
// its process group, and what it ended of what the host detached from
// itself; "" for nothing.
func leftNote(held, escaped, adopted []leftProc) string {
	var notes []string
	if len(held) > 0 {
		notes = append(notes, fmt.Sprintf("the host left %s holding its output after it exited (ended %v later)", describe(held), holdGrace))
	}
	if len(escaped) > 0 {
		notes = append(notes, fmt.Sprintf("the criterion ended %s, left running outside the host's process group", describe(escaped)))
	}
	if len(adopted) > 0 {
		notes = append(notes, fmt.Sprintf("the criterion ended %s, which the host left running detached from it (found as a child of this process, a child subreaper)", describe(adopted)))
	}
	return strings.Join(notes, "; ")
}

// ownChildren lists this process's children, if it is a child subreaper
// (see endAdopted).
func ownChildren() []proc.ID {
	if !child.Subreaper() {
		return nil
	}
	return proc.Children(os.Getpid())
}

// endAdopted ends what the host of run detached from itself and left
// running, and reaps it: when this process is a child subreaper (Linux:
// mcpstdio hostprobe makes itself one), whatever the host started and
// orphaned, a daemon's double fork and setsid included, whatever its
// environment and stdio, has become a child of this process. Those are
// its children that were not before the run and are not the host; any it
// starts meanwhile would be taken for the host's, which is why only a
// process that runs the criteria alone should be one. It returns the
// processes that were still running, with their command lines, and reaps
// the ended ones too. Ending a process may orphan its own children, which
// are adopted in turn: a few rounds end them as well.
func endAdopted(run *commandRun) []leftProc {
	if !child.Subreaper() {
		return nil
	}
	var ended []leftProc
	for range 4 {
		var found []proc.ID
		for _, id := range proc.Children(os.Getpid()) {
			if id.PID != run.cmd.Process.Pid && !slices.Contains(run.before, id) {
				found = append(found, id)
			}
		}
		if len(found) == 0 {
			break
		}
		for _, id := range found {
			if id.Running() {
				ended = append(ended, leftProc{id, proc.CommandLine(id.PID)})
				killPID(id.PID)
			}
		}
		for _, id := range found {
			child.Reap(id.PID, holdGrace)
		}
	}
	return ended
}
