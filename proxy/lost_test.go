package proxy

import (
	"testing"
	"time"
)

// TestUnansweredNotAfterLostDetail: a request is called unanswered only
// while the observer has seen all of the stream its response would come
// on since the request was written.
func TestUnansweredNotAfterLostDetail(t *testing.T) {
	t.Parallel()
	start := time.Now()
	o := &observer{start: start, cfg: Config{Unanswered: time.Second, Stuck: time.Second}, pending: map[pkey]*request{}}
	for d := range o.dirs {
		o.dirs[d] = &dirObs{d: dirIndex(d), fa: &frameAsm{}, fw: &forwarder{}}
	}
	r := &request{d: dIn, id: []byte("7"), method: "tools/call", written: start}
	o.pending[pkey{dIn, "7"}] = r
	now := start.Add(2 * time.Second)
	if vs := o.unanswered(now); len(vs) != 1 {
		t.Fatalf("all seen: unanswered() = %v, want one verdict", vs)
	}
	o.dirs[dOut].gapAt = start.Add(time.Millisecond)
	if vs := o.unanswered(now); len(vs) != 0 {
		t.Errorf("a frame partly seen after the request: unanswered() = %v, want none", vs)
	}
	o.dirs[dOut].gapAt = start.Add(-time.Millisecond)
	if vs := o.unanswered(now); len(vs) != 1 {
		t.Errorf("a frame partly seen before the request: unanswered() = %v, want one verdict", vs)
	}
	o.dirs[dOut].fa.active, o.dirs[dOut].fa.gap = true, true
	if vs := o.unanswered(now); len(vs) != 0 {
		t.Errorf("a line in progress partly seen: unanswered() = %v, want none", vs)
	}
}

// TestStageUnseenAfterLostDetail: a pending request is "waiting" or
// "responding" only while the observer has seen all of the stream its
// response comes on since it was written; else "unseen".
func TestStageUnseenAfterLostDetail(t *testing.T) {
	t.Parallel()
	start := time.Now()
	o := &observer{start: start, pending: map[pkey]*request{}}
	for d := range o.dirs {
		o.dirs[d] = &dirObs{d: dirIndex(d), fa: &frameAsm{}, fw: &forwarder{}}
	}
	r := &request{d: dIn, id: []byte("7"), method: "tools/call", written: start}
	out := o.dirs[dOut]
	for _, c := range []struct {
		name        string
		gapAt       time.Time
		line        string // the line in progress on the response's stream, as seen so far
		active, gap bool
		host        bool // the server's request, answered on stdin
		want        string
	}{
		{name: "all seen", want: "waiting"},
		{name: "a frame partly seen before the request", gapAt: start.Add(-time.Millisecond), want: "waiting"},
		{name: "a frame partly seen after the request", gapAt: start.Add(time.Millisecond), want: "unseen"},
		{name: "a line in progress partly seen", active: true, gap: true, want: "unseen"},
		{name: "the response arriving, all seen", line: `{"jsonrpc":"2.0","id":7,"result":{"content":[`, active: true, want: "responding"},
		{name: "another response arriving", line: `{"jsonrpc":"2.0","id":8,"result":{"content":[`, active: true, want: "waiting"},
		{name: "the response arriving, partly seen", line: `{"jsonrpc":"2.0","id":7,"result":{"content":[`, active: true, gap: true, want: "unseen"},
		{name: "the response arriving after an earlier gap", gapAt: start.Add(time.Millisecond), line: `{"jsonrpc":"2.0","id":7,"result":{"content":[`, active: true, want: "responding"},
		{name: "the server's request, detail of stdout lost", host: true, gapAt: start.Add(time.Millisecond), want: "waiting"},
	} {
		d := out
		r.d = dIn
		if c.host {
			r.d, d = dOut, o.dirs[dIn]
			*out.fa = frameAsm{}
			out.gapAt = c.gapAt // the other stream's loss says nothing of the host's answer
		} else {
			d.gapAt = c.gapAt
		}
		*d.fa = frameAsm{}
		d.fa.active, d.fa.gap = c.active, c.gap
		d.fa.body, d.fa.size = []byte(c.line), int64(len(c.line))
		if got := o.stage(r); got != c.want {
			t.Errorf("%s: stage %q, want %q", c.name, got, c.want)
		}
		d.gapAt, out.gapAt = time.Time{}, time.Time{}
	}
}
