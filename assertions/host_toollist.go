package assertions

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ToolLister is a Host that can list the server's tools; large-tools-list
// needs it of a Go Host.
type ToolLister interface {
	ListTools(ctx context.Context) ([]string, error)
}

// hostLargeToolsList is large-tools-list: its evidence starts with what
// the host did with the list: "taken" (every tool: pass), "rejected" (an
// error or a failing exit with its message: warn, a limit the host states),
// "truncated" (fewer tools, or a call of a tool that is not the last, with
// no error: fail), or "taken, unverified" (exit 0 with nothing to tell: warn).
func hostLargeToolsList(ctx context.Context, r *hostFixture) Result {
	if err := r.startWith(ctx, "-tools-list-bytes", fmt.Sprint(r.cfg.ToolsListBytes)); err != nil {
		return hostStartFailed(err)
	}
	size := r.cfg.ToolsListBytes
	warn := func(format string, args ...any) Result {
		return Result{Verdict: Warn, Rule: ruleHostToolList, Evidence: fmt.Sprintf(format, args...)}
	}
	if r.command == nil {
		l, ok := r.host.(ToolLister)
		if !ok {
			return skip("the Host does not implement assertions.ToolLister")
		}
		lctx, cancel := context.WithTimeout(ctx, r.cfg.Within)
		defer cancel()
		names, err := l.ListTools(lctx)
		if err != nil {
			if lctx.Err() != nil {
				return failErr(ruleHostToolList, fmt.Sprintf("a %d-byte tools/list: no answer within %v", size, r.cfg.Within), err)
			}
			return warn("rejected: a %d-byte tools/list gave the error %s", size, truncate(firstLine(err.Error()), 300))
		}
		fillers := 0
		for _, n := range names {
			if strings.HasPrefix(n, "filler-") {
				fillers++
			}
		}
		// The fake's report file is rewritten by a goroutine of its own after
		// each change: it may not show the list yet when the host has it.
		if err := r.waitReport(ctx, func(rep fakeserver.Report) bool { return rep.FillerTools > 0 }); err != nil {
			return warn("unverified: the host has %d tools, %d of them filler tools, from a %d-byte tools/list, but %v", len(names), fillers, size, err)
		}
		rep, _ := r.fakeReport()
		if fillers != rep.FillerTools || !slices.Contains(names, fakeserver.FillerTool(fillers)) {
			return fail(ruleHostToolList, "truncated: from a %d-byte tools/list of %d filler tools (the last %s) the host kept %d tools, %d of them filler tools, with no error", size, rep.FillerTools, fakeserver.FillerTool(rep.FillerTools), len(names), fillers)
		}
		return pass("taken: a %d-byte tools/list, all %d tools", size, len(names))
	}
	o := r.work(ctx, r.cfg.Within, nil)
	rep := r.settled(ctx)
	listed := slices.ContainsFunc(rep.Requests, func(q fakeserver.RequestRecord) bool {
		return q.Method == wire.MethodToolsList && q.ResponseBytes >= int64(size)
	})
	var filler string
	for _, q := range rep.Requests {
		if strings.HasPrefix(q.Tool, "filler-") {
			filler = q.Tool
		}
	}
	last := fakeserver.FillerTool(rep.FillerTools)
	switch {
	case o.atLimit:
		return fail(ruleHostToolList, "a %d-byte tools/list (answered: %v): the host was still running %v later (the harness's bound: -within)", size, listed, r.cfg.Within)
	case r.command.ExpectOutput != nil && o.exit == exitZero && !r.command.ExpectOutput.MatchString(o.output):
		return fail(ruleHostToolList, "truncated or lost: after a %d-byte tools/list the host exited 0 but its output does not match -expect-output %q; last line: %s", size, r.command.ExpectOutput, lastLine(o.output))
	case o.err != nil && listed:
		return warn("rejected: after a %d-byte tools/list of %d tools the host ended with %s", size, rep.FillerTools, o.how())
	case o.err != nil:
		return fail(ruleHostToolList, "a %d-byte tools/list (answered: %v): the host ended with %s", size, listed, o.how())
	case !listed && filler == "":
		return skip("the host never asked for tools/list (it ended with %s)", o.how())
	case r.command.ExpectOutput != nil:
		return pass("taken: after a %d-byte tools/list the host's output matches %q", size, r.command.ExpectOutput)
	case filler != "" && filler != last:
		return fail(ruleHostToolList, "truncated: the host called %s from a %d-byte tools/list whose last tool is %s, with no error", filler, size, last)
	case filler != "":
		return pass("taken: the host took a %d-byte tools/list and called its last tool, %s", size, filler)
	}
	return warn("taken, unverified: the host took a %d-byte tools/list and exited 0; whether it kept every tool is not known: give -expect-output (HostCommand.ExpectOutput)", size)
}
