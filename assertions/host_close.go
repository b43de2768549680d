package assertions

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
)

// ruleHostCloseBounded is close-bounded's rule.
const ruleHostCloseBounded = "a write to the server that cannot complete (its stdin pipe full, never read) holds up neither the call the host abandoned nor its close: both end within the host's own bound"

// closePause is how long after its abandoned call returns a Go Host is
// closed in close-bounded: a host goes on with its work before it closes,
// and a cancel it sends on its own has started by then.
const closePause = 200 * time.Millisecond

// hostCloseBounded is close-bounded: the fake never answers the host's
// call, and once it has read it, stops reading stdin and fills its pipe
// (fakeserver.Faults.FillStdinAfterCall), so the host's next write, its
// notifications/cancelled most likely, cannot complete. A Go Host's call
// is abandoned by its context, then the host closed closePause after the
// call returned: the call must return within Within and a grace, and Close
// within Within. A host command is waited for until it ends, within
// HostConfig.Cap. The goroutines a Go Host runs for the call and Close
// (pprof-labelled) are named, when they wait, by their stacks' top frames.
func hostCloseBounded(ctx context.Context, r *hostFixture) Result {
	if runtime.GOOS != "linux" {
		return skip("the fake fills its stdin pipe through /proc/self/fd/0, which %s does not have", runtime.GOOS)
	}
	if err := r.startWith(ctx, "-call", fakeserver.CallHang, "-fill-stdin-after-call"); err != nil {
		return hostStartFailed(err)
	}
	if r.command != nil {
		return r.closeBoundedCommand(ctx)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel()
		r.waitReport(cctx, func(rep fakeserver.Report) bool { return !rep.StdinStopped.IsZero() })
	}()
	label := fmt.Sprintf("%s %p", r.name, r)
	var o hostOutcome
	labeled(cctx, label, func() { o = r.work(cctx, r.cfg.Within, nil) })
	cancel()
	rep, _ := r.fakeReport()
	if rep.StdinStopped.IsZero() {
		return fail(ruleHostCloseBounded, "the fake never read the host's call (requests: %s); the call ended: %s", requestMethods(rep), o.how())
	}
	if rep.StdinFill == 0 {
		return notFilled(rep)
	}
	fill := pipeFill(rep)
	if o.hung {
		return fail(ruleHostCloseBounded, "the host's CallTool did not return %v after its context ended, with %s%s", o.ended.Sub(rep.StdinStopped).Round(time.Millisecond), fill, waiting(label))
	}
	returned := o.ended.Sub(rep.StdinStopped).Round(time.Millisecond)
	pause := time.NewTimer(closePause)
	select {
	case <-pause.C:
	case <-ctx.Done():
		pause.Stop()
		return failErr(ruleHostCloseBounded, "before closing the host", ctx.Err())
	}
	h := r.host
	r.host = nil // closed here, with Within as its bound
	t0 := time.Now()
	var done <-chan outcome[struct{}]
	labeled(ctx, label, func() {
		done = goAdapter("the host's Close", func() (struct{}, error) { return struct{}{}, h.Close() })
	})
	t := time.NewTimer(r.cfg.Within)
	defer t.Stop()
	select {
	case c := <-done:
		how := fmt.Sprintf("returned after %v", time.Since(t0).Round(time.Millisecond))
		if c.err != nil {
			how += ": " + truncate(firstLine(c.err.Error()), 200)
		}
		return pass("the call the host abandoned returned %v after the fake stopped reading, with %s; Close, %v later, %s", returned, fill, closePause, how)
	case <-t.C:
	}
	where := waiting(label)
	if rep, _ := r.fakeReport(); !rep.EOF {
		where += "; it had not closed the fake's stdin"
	}
	r.kill() // the fake's end releases whatever waits on its stdin
	late := "it had not returned a further " + r.cfg.Within.String() + " after the criterion killed the fake"
	select {
	case <-done:
		late = fmt.Sprintf("it returned once the criterion killed the fake, %v after it began", time.Since(t0).Round(time.Millisecond))
	case <-time.After(r.cfg.Within):
	}
	return fail(ruleHostCloseBounded, "the host's Close did not return within %v (the call it abandoned had returned %v after the fake stopped reading), with %s%s; %s", r.cfg.Within, returned, fill, where, late)
}

// closeBoundedCommand is close-bounded for a host command: it ends within
// the cap, by its own timeout, or it fails.
func (r *hostFixture) closeBoundedCommand(ctx context.Context) Result {
	o := r.work(ctx, r.cfg.Cap, nil)
	rep := r.settled(ctx)
	call, ok := firstCall(rep)
	if !ok {
		return noCall(rep, o)
	}
	if rep.StdinFill == 0 {
		return notFilled(rep)
	}
	fill := pipeFill(rep)
	if o.atLimit {
		still := fmt.Sprintf("the host was still running %v after its call reached the fake (the cap is %v: HostConfig.Cap, -host-cap), with %s", o.ended.Sub(call.Arrived).Round(time.Millisecond), r.cfg.Cap, fill)
		if rep.EOF {
			return fail(ruleHostCloseBounded, "%s: it had closed the fake's stdin %v after the call, so no write held it; it waits, with no bound, for a server that does not end (one that stops reading never sees stdin's end: see stdin-not-read)", still, rep.EOFAt.Sub(call.Arrived).Round(time.Millisecond))
		}
		return fail(ruleHostCloseBounded, "%s, and it never closed the fake's stdin: a write to the server waits on the full pipe (its notifications/cancelled, most likely), or it has no timeout of its own (see host-timeout)", still)
	}
	return pass("the host ended %v after its call reached the fake (%s), with %s", o.ended.Sub(call.Arrived).Round(time.Millisecond), o.how(), fill)
}

// notFilled is the verdict when the fake could not fill its stdin: nothing
// was blocked, so nothing was checked.
func notFilled(rep fakeserver.Report) Result {
	return skip("the fake stopped reading but could not fill its stdin (%s): no write to it was blocked", cmp.Or(rep.StdinFillError, "no reason given"))
}

// pipeFill says how full the fake left its stdin pipe.
func pipeFill(rep fakeserver.Report) string {
	return fmt.Sprintf("the fake's stdin pipe holding %d of %d bytes (never read again)", rep.StdinFill, rep.StdinCapacity)
}

// waiting says where the host's goroutines labelled value wait, and
// whether one of them waits on a write (to the server, whose stdin is full).
func waiting(value string) string {
	where := goroutinesLabeled(value, "")
	if goroutinesLabeled(value, "(*FD).Write") != "" {
		return ": it waits on a write to the server that cannot complete" + where
	}
	return ": none of its goroutines waits on a write (it ignores its context?)" + where
}

// hostLabel is the pprof label that marks the goroutines a Go Host runs
// for close-bounded: they inherit it from the criterion's calls into it.
const hostLabel = "mcpstdio-close-bounded"

// labeled runs f with the pprof label hostLabel set to value: the
// goroutines it starts, and theirs, carry it.
func labeled(ctx context.Context, value string, f func()) {
	pprof.Do(ctx, pprof.Labels(hostLabel, value), func(context.Context) { f() })
}

// goroutinesLabeled names the goroutines of this process that carry the
// label value and whose stack holds a frame matching marker ("" for any),
// by their top frames outside the runtime and this package: "; a goroutine
// waits in A ← B ← C".
func goroutinesLabeled(value, marker string) string {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return ""
	}
	want := fmt.Sprintf("%q:%q", hostLabel, value)
	var out []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(g, want) || !strings.Contains(g, marker) {
			continue
		}
		var frames []string
		for _, l := range strings.Split(g, "\n") {
			f := strings.Fields(l)
			if len(f) < 3 || f[0] != "#" || !strings.HasPrefix(f[1], "0x") {
				continue
			}
			fn, _, _ := strings.Cut(f[2], "+0x")
			if strings.HasPrefix(fn, "runtime") || strings.HasPrefix(fn, "internal/") || strings.HasPrefix(fn, "sync.") ||
				strings.HasPrefix(fn, "os.") || strings.HasPrefix(fn, "syscall.") || strings.HasPrefix(fn, "github.com/mcpstdio/mcpstdio/assertions.") {
				continue
			}
			if frames = append(frames, fn[strings.LastIndex(fn, "/")+1:]); len(frames) == 3 {
				break
			}
		}
		if len(frames) > 0 {
			out = append(out, strings.Join(frames, " ← "))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; a goroutine of the host waits in " + strings.Join(out, "; another in ")
}
