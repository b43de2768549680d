package assertions

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// The cancel after output began is placed by bytes, not by the response's
// id: a server may put the id last (the TypeScript SDK writes
// {"result":…,"jsonrpc":"2.0","id":N}), so the host learns whose frame it
// is only when it ends. With one request outstanding, the first frame that
// is neither a notification nor a server request is its response whatever
// the key order: the criterion lets exactly CancelAfter bytes of that frame
// through, holds reads there, and cancels.

// heldFrame is where the criterion held the host's reads: CancelAfter bytes
// into the frame that began at start.
type heldFrame struct {
	start, at int64 // stdout offsets of the frame's start and of the hold
}

// frameCounter sums the stdout bytes of the frames from the server that
// were added to the session's transcript after a point, reading the
// transcript as it goes (by the entries' Seq: frames of one read share a
// time): steps of at most cancelStep bytes keep each read well under what
// the transcript holds (Limits.Transcript, 256 by default: 4 KiB is ~130 of
// the smallest frames).
type frameCounter struct {
	next          int64 // the Seq of the first entry not yet counted
	bytes, frames int64
}

const cancelStep = 4 << 10

// newFrameCounter counts from the entries added after now.
func newFrameCounter(s *mcptest.Session) *frameCounter {
	c := &frameCounter{next: s.Stats().TranscriptDropped}
	if tr := s.Transcript(); len(tr) > 0 {
		c.next = tr[len(tr)-1].Seq + 1
	}
	return c
}

// update counts the entries not counted yet; ok is false if some were
// dropped from the transcript before they could be counted.
func (c *frameCounter) update(s *mcptest.Session) (ok bool) {
	tr := s.Transcript()
	if len(tr) > 0 && tr[0].Seq > c.next {
		return false
	}
	for _, e := range tr {
		if e.Seq >= c.next {
			if e.Dir == "←" {
				c.bytes += e.Size + 1
				c.frames++
			}
			c.next = e.Seq + 1
		}
	}
	return true
}

// waitBytes waits until the host has read n stdout bytes in all or p has
// ended, bounded by within.
func waitBytes(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, n int64, within time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.WaitStdoutBytes(wctx, n) }()
	select {
	case err := <-errc:
		return err
	case <-p.Done():
		cancel()
		<-errc
		return nil
	}
}

// holdInResponse lets stdout through until reads are held exactly n bytes
// into a frame that has not ended, each step bounded by within. It returns
// where it held, or a Result when it could not: the response ended first
// (a skip naming its size) or the output stopped.
func holdInResponse(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, base int64, c *frameCounter, n int64, cfg ServerConfig) (heldFrame, *Result) {
	for {
		if !c.update(s) {
			r := skip("more frames came before the Large call's response than the session's transcript keeps (Limits.Transcript): the response's start cannot be placed")
			return heldFrame{}, &r
		}
		if ended(p) {
			r := skip("the Large call's response was only %d bytes, under the %d bytes after which the cancel is sent: configure a larger call or a smaller CancelAfter", p.Received(), n)
			return heldFrame{}, &r
		}
		at := s.Stats().StdoutBytes
		start := base + c.bytes
		in := at - start
		if in >= n {
			return heldFrame{start: start, at: at}, nil
		}
		step := min(n-in, cancelStep)
		s.StallReadsAfter(step)
		if err := waitBytes(ctx, s, p, at+step, cfg.Within); err != nil {
			r := failErr(ruleCancelAfter, fmt.Sprintf("the server's output stopped %d bytes into a frame after the Large call, before %d bytes", s.Stats().StdoutBytes-start, n), err)
			return heldFrame{}, &r
		}
	}
}

// CheckCancelAfterOutputBegan sends the Large call with the host's reads
// stalled, lets exactly CancelAfter bytes of its response through (the
// first frame after the request that is neither a notification nor a
// server request), holds reads there and cancels it; a server that ends
// then fails, and the verdict says whether the frame was still unfinished
// at the cancel. It resumes reads and checks that the session goes on: the
// rest of the response (or its end) comes while stdout grows, and a second
// request completes. The cancel
// may be ignored (the response is already on the wire) or answered; it
// must not break anything. A response shorter than CancelAfter is a skip
// naming its size. Each step is bounded by Within.
func CheckCancelAfterOutputBegan(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	if cfg.Large == nil {
		return skip("no Large tool call configured (ServerConfig.Large)")
	}
	n := int64(cfg.CancelAfter)
	s.StallReads()
	base, c := s.Stats().StdoutBytes, newFrameCounter(s)
	p := s.Send(wire.MethodToolsCall, cfg.Large.params(nil))
	h, res := holdInResponse(ctx, s, p, base, c, n, cfg)
	if res != nil {
		s.ResumeReads()
		return *res
	}
	if ex := s.Stats().Exit; ex.How != "" {
		s.ResumeReads()
		return fail(ruleCancelAfter, "the server ended while %d bytes of a frame after the Large call had arrived: %s", n, ex)
	}
	if err := p.Cancel("mcpstdio: cancelled after the response began"); err != nil {
		s.ResumeReads()
		return failErr(ruleCancelAfter, fmt.Sprintf("sending notifications/cancelled %d bytes into the response", n), err)
	}
	// Held: nothing more of the frame reaches the host until resumed.
	unfinished := !ended(p) && s.Stats().StdoutBytes == h.at
	alive := s.Stats().Exit.How == ""
	s.ResumeReads()
	if !alive {
		return fail(ruleCancelAfter, "the server ended after the cancel that came %d bytes into its response: %s", n, s.Stats().Exit)
	}
	// A server still writing the rest at the bound is slow, not stopped:
	// waited on while its stdout grows (the battery makes that a warning).
	_, werr := waitProgressing(ctx, s, p, cfg.Within)
	if werr != nil && !ended(p) {
		return failErr(ruleCancelAfter, fmt.Sprintf("the rest of the response after the cancel %d bytes in", n), werr)
	}
	in := n
	if start, ok := responseStart(s, p, base, c); ok {
		in = h.at - start
	}
	if in <= 0 {
		return skip("a frame of more than %d bytes came before the Large call's response and was held instead: the cancel came before the response began; configure a larger CancelAfter", n)
	}
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		return failErr(ruleCancelAfter, fmt.Sprintf("second request after cancelling a response %d bytes in", in), err)
	}
	held := "held mid-frame while cancelled"
	if !unfinished {
		held = "the frame was not seen unfinished at the cancel"
	}
	return pass("cancelled %d bytes into its response (%s, the server still running); %s; the second request completed", in, held, afterCancel(ctx, p))
}

// responseStart finds where p's response began on stdout, from the
// transcript once it has arrived: after the frames from the server that
// came before it, counted by c up to the hold and from the transcript
// after. Bytes read and frames recorded are not in step
// while reads flow (the reader frames what it has read a moment later), so
// the hold is placed by the counts seen then and checked by this after the
// fact. ok is false if the response is not found.
func responseStart(s *mcptest.Session, p *mcptest.Pending, base int64, c *frameCounter) (start int64, ok bool) {
	size := p.Received()
	start = base + c.bytes
	for _, e := range s.Transcript() {
		if e.Dir != "←" || e.Seq < c.next {
			continue
		}
		if e.Size == size || e.Size+1 == size {
			return start, true
		}
		start += e.Size + 1
	}
	return 0, false
}

// AssertCancelAfterOutputBegan is CheckCancelAfterOutputBegan for tests.
func AssertCancelAfterOutputBegan(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckCancelAfterOutputBegan(testContext(t), s, cfg))
}
