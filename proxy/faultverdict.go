package proxy

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// Verdicts about what the proxy itself holds or missed: its own faults
// are part of the picture, and so is the detail it lost.

// faultsHolding finds stop faults that have kept a source unread for
// Stuck or longer, with the bytes waiting in its pipe (Linux FIONREAD):
// the writer on the other side of that pipe is held by the proxy, not by
// the side it writes to.
func (o *observer) faultsHolding(now time.Time) []record.Verdict {
	var vs []record.Verdict
	for _, d := range o.dirs {
		since := d.fw.stopped.Load()
		if since == 0 || now.Sub(time.Unix(0, since)) < o.cfg.Stuck {
			continue
		}
		name := "stop"
		if n := d.fw.stopName.Load(); n != nil {
			name = *n
		}
		writer := "the server"
		if d.d == dIn {
			writer = "the host"
		}
		text := fmt.Sprintf("the proxy's fault %s is holding %s for %s", name, srcNames[d.d], dur(now.Sub(time.Unix(0, since))))
		if n, ok := pipeBuffered(d.fw.src); ok {
			text += fmt.Sprintf(": %s waiting in %s pipe", size(int64(n)), srcNames[d.d])
			if c := pipeCapacity(d.fw.src); c > 0 && n >= c-4096 {
				text += fmt.Sprintf("; %s is blocked writing", writer)
			}
		}
		vs = append(vs, record.Verdict{Kind: record.VerdictFaultHolding, Text: text})
	}
	return vs
}

// heldOutput says what waits unread in the server's stdout pipe (Linux),
// "" if nothing does or the system cannot say: bytes there mean the server
// has written, and is blocked once the pipe is full.
func (o *observer) heldOutput() string {
	fw := o.dirs[dOut].fw
	n, ok := pipeBuffered(fw.src)
	if !ok || n == 0 {
		return ""
	}
	text := fmt.Sprintf("%s of its output wait unread in its stdout pipe", size(int64(n)))
	if fw.stopped.Load() != 0 {
		name := "stop"
		if n := fw.stopName.Load(); n != nil {
			name = *n
		}
		text += " (the proxy's own fault " + name + " is holding it)"
	} else if b, _ := o.blockedWrite(dOut, time.Now()); b >= o.cfg.Stuck {
		text += " (the proxy's write to the host is blocked)"
	}
	if c := pipeCapacity(fw.src); c > 0 && n >= c-4096 {
		text += "; the server is blocked writing"
	}
	return text
}

// lostDetail says how much detail the observer lost and how many frames
// a replay will not be able to check: the first verdict, so that it is
// read before the others, which stand on what the observer saw.
func (o *observer) lostDetail() []record.Verdict {
	m := o.m
	var parts []string
	if m.DroppedBytes != 0 || m.DroppedEvents != 0 || m.GapFrames != 0 {
		parts = append(parts, fmt.Sprintf("the observer fell behind and missed %s (%d events); %d %s only partly seen, which a replay cannot check; every byte was forwarded",
			size(m.DroppedBytes), m.DroppedEvents, m.GapFrames, plural(int(m.GapFrames), "frame was", "frames were")))
	}
	if m.Forgotten != 0 {
		parts = append(parts, fmt.Sprintf("the proxy's pending table (%d entries) was full and forgot the %d oldest %s (%d of them unanswered and not cancelled then): their responses, cancels and verdicts are not tracked",
			o.cfg.MaxPending, m.Forgotten, plural(int(m.Forgotten), "request", "requests"), o.forgottenOpen))
	}
	if len(parts) == 0 {
		return nil
	}
	return []record.Verdict{{Kind: record.VerdictDropped, Text: "detail lost: " + strings.Join(parts, "; and ")}}
}
