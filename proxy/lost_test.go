package proxy

import (
	"testing"
	"time"
)

// TestUnansweredNotAfterLostDetail: a request is called unanswered only
// while the observer has seen all of the stream its response would come
// on since the request was written.
func TestUnansweredNotAfterLostDetail(t *testing.T) {
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
