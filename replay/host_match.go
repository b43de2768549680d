package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// poll matches what the session has received since the last look.
func (p *hostPlayer) poll() {
	// Responses.
	for i, pd := range p.pend {
		if p.checked[i] {
			continue
		}
		select {
		case <-pd.Done():
		default:
			continue
		}
		p.checked[i] = true
		delete(p.pend, i)                          // its response is not kept
		resp, err := pd.Wait(context.Background()) // done: returns at once
		p.response(i, resp, err)
	}
	// Notifications.
	for _, n := range p.s.TakeNotifications() {
		p.notification(n)
	}
	// Junk lines and answers to requests never sent, counted.
	st := p.s.Stats()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.takeCounted(&p.junkQ, &p.junkSeen, st.JunkLines+st.ParseErrors+st.Batches, "a line that is not JSON-RPC (see the session's junk)")
	p.takeCounted(&p.unkQ, &p.unkSeen, st.UnknownIDs, "a response to no request the host sent")
}

// takeCounted matches what the session only counts (junk lines, answers
// to requests never sent), seen so far of n, to the recorded ones in q, in
// order; p.mu held.
func (p *hostPlayer) takeCounted(q *[]int, seen *int64, n int64, extra string) {
	for ; *seen < n; *seen++ {
		switch {
		case p.rules && len(*q) == 0:
			// Judged by the rules, not compared.
		case len(*q) > 0:
			p.resolved[(*q)[0]] = true
			*q = (*q)[1:]
		case len(p.gaps) > 0 || p.rec.Cut != "":
			p.lost++
		default:
			p.departLocked(Departure{Kind: Extra, Seq: -1, Dir: record.DirOut, Text: extra})
		}
	}
}

// response matches the response to host request i (or the error that
// stands for it).
func (p *hostPlayer) response(i int, resp *mcptest.Response, rerr error) {
	f := &p.rec.Host[i]
	j := p.respFor[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rules {
		if rerr != nil && errors.Is(rerr, mcptest.ErrClosed) {
			return // the session ended first: not answered
		}
		p.answered[i] = time.Now()
		if resp != nil {
			p.resps[i] = respAt{resp.Offset, resp.Size}
		}
		if j >= 0 {
			p.resolved[j] = true
		}
		return
	}
	if rerr != nil {
		if errors.Is(rerr, mcptest.ErrClosed) {
			return // the session ended: the response is missing, if one was recorded
		}
		if j >= 0 {
			p.resolved[j] = true
			d := Departure{
				Kind: Different, Seq: p.rec.Server[j].Seq, Dir: record.DirOut, Method: f.Method, ID: f.ID,
				Text: "no usable response: " + rerr.Error(),
			}
			if p.s.Stdout().Ended {
				d.Kind, d.Text = Missing, "the server's stdout ended first: "+rerr.Error()
			}
			p.departLocked(d)
		}
		return
	}
	p.resps[i] = respAt{resp.Offset, resp.Size}
	if j < 0 {
		if len(p.gaps) > 0 || p.rec.Cut != "" {
			p.lost++ // its recorded answer may be in what the record lost, or after its cut
			return
		}
		p.departLocked(Departure{
			Kind: Extra, Seq: -1, Dir: record.DirOut, Method: f.Method, ID: f.ID,
			Text: "a response to a request the recorded server never answered",
		})
		return
	}
	if p.resolved[j] {
		// Reported missing before it came.
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("the response to %s id=%s came after it was reported missing", f.Method, f.ID))
		return
	}
	p.resolved[j] = true
	got := []byte(`{"jsonrpc":"2.0","id":0,"result":`)
	got = append(append(got, resp.Result...), '}')
	if resp.Error != nil {
		e, _ := json.Marshal(resp.Error)
		got = append(append([]byte(`{"jsonrpc":"2.0","id":0,"error":`), e...), '}')
	}
	p.compareLocked(j, got, f.Method)
}

// compareLocked compares what came with recorded server frame j; p.mu
// held.
func (p *hostPlayer) compareLocked(j int, got []byte, method string) {
	if p.rules {
		return // judged by the rules, not compared
	}
	want := &p.rec.Server[j]
	if method == "" {
		method = want.Method
	}
	diff, checked := p.rec.compare(want, got, p.o)
	if !checked {
		p.departLocked(Departure{
			Kind: Unchecked, Seq: want.Seq, Dir: record.DirOut, Method: method, ID: want.ID,
			Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): it came, not compared", len(want.Head), want.Size),
		})
		return
	}
	p.report.Checked++
	if diff != "" {
		what := "message"
		switch want.Kind {
		case record.KindResponse, record.KindError:
			what = "response"
		case record.KindNotification:
			what = "notification"
		case record.KindRequest:
			what = "server request"
		}
		p.departLocked(Departure{
			Kind: Different, Seq: want.Seq, Dir: record.DirOut, Method: method, ID: want.ID,
			Text: "the server sent a different " + what, Diff: diff,
		})
	}
}

// gapBetween reports whether the record lost detail between server
// frames a and b (exclusive; a may be -1).
func (p *hostPlayer) gapBetween(a, b int) bool {
	for _, g := range p.gaps {
		if g > a && g < b {
			return true
		}
	}
	return false
}

// notification matches one notification: to the next recorded one of its
// method, unless it differs and the record lost detail before that one
// (then it is taken for one of the lost, and not checked).
func (p *hostPlayer) notification(n mcptest.Notification) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.lastNote[n.Method]
	if !ok {
		last = -1
	}
	q := p.noteQ[n.Method]
	if p.rules {
		// Matched by order, for the waits; judged by the rules, not
		// compared.
		if len(q) > 0 {
			p.noteQ[n.Method], p.lastNote[n.Method], p.resolved[q[0]] = q[1:], q[0], true
		}
		return
	}
	if len(q) == 0 {
		if p.gapBetween(last, len(p.rec.Server)) || p.rec.Cut != "" {
			p.lost++
			return
		}
		p.departLocked(Departure{
			Kind: Extra, Seq: -1, Dir: record.DirOut, Method: n.Method,
			Text: fmt.Sprintf("a notification the record has not (%d bytes)", n.Size),
		})
		return
	}
	j := q[0]
	got, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", n.Method, n.Params})
	if p.gapBetween(last, j) {
		if diff, _ := p.rec.compare(&p.rec.Server[j], got, p.o); diff != "" {
			p.lost++
			return
		}
	}
	p.noteQ[n.Method] = q[1:]
	p.lastNote[n.Method] = j
	p.resolved[j] = true
	if n.Params == nil && n.Head != nil {
		p.departLocked(Departure{
			Kind: Different, Seq: p.rec.Server[j].Seq, Dir: record.DirOut, Method: n.Method,
			Text: fmt.Sprintf("a notification of %d bytes where the record has %d", n.Size, p.rec.Server[j].Size),
		})
		return
	}
	p.compareLocked(j, got, "")
}

// serverRequest answers a request from the server under test with the
// recorded host's answer to the matching recorded request.
func (p *hostPlayer) serverRequest(_ context.Context, req *wire.Message) (any, error) {
	defer p.nudge()
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.srqQ[req.Method]
	if len(q) == 0 {
		if p.rules {
			return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "mcpstdio replay: the record has no " + strconv.Quote(req.Method) + " request here"}
		}
		p.departLocked(Departure{
			Kind: Extra, Seq: -1, Dir: record.DirOut, Method: req.Method, ID: req.ID,
			Text: "a server request the record has not: answered with -32601",
		})
		return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "mcpstdio replay: the record has no " + strconv.Quote(req.Method) + " request here"}
	}
	j := q[0]
	p.srqQ[req.Method] = q[1:]
	p.resolved[j] = true
	got, _ := json.Marshal(req)
	p.compareLocked(j, got, "")
	k, ok := p.answers[wire.Key(p.rec.Server[j].ID)]
	if !ok || !p.rec.Host[k].Whole() {
		return nil, &wire.RPCError{Code: wire.CodeInternalError, Message: "mcpstdio replay: the record has not the host's answer to this request"}
	}
	m, err := wire.ParseMessage(p.rec.Host[k].body())
	if err != nil {
		return nil, &wire.RPCError{Code: wire.CodeInternalError, Message: "mcpstdio replay: the recorded answer is not JSON-RPC: " + err.Error()}
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// nudge wakes the player's wait (wait) to look at what changed: a server
// request arrived and was answered. It never blocks: a wake already
// pending will do.
func (p *hostPlayer) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
