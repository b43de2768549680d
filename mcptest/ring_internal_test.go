package mcptest

import (
	"fmt"
	"testing"
)

// TestRing: slot, put and push keep the newest items within the count and
// the byte budget, oldest first, and count every item dropped.
func TestRing(t *testing.T) {
	r := newRing[int](3, 0)
	for i := range 7 {
		*r.slot(0) = i
	}
	if got := fmt.Sprint(*r.at(0), *r.at(1), *r.at(2), r.n, r.dropped, r.bytes); got != "4 5 6 3 4 0" {
		t.Errorf("slot: items, n, dropped, bytes = %s; want 4 5 6 3 4 0", got)
	}
	c := newRing[int](2, 10) // full by count, within the budget: the oldest slot turns
	for i := range 3 {
		*c.put(1) = i
	}
	if got := fmt.Sprint(*c.at(0), *c.at(1), c.n, c.dropped, c.bytes); got != "1 2 2 1 2" {
		t.Errorf("put: items, n, dropped, bytes = %s; want 1 2 2 1 2", got)
	}
	b := newRing[int](4, 10)
	var want []int // the reference: newest items within 4 and 10 bytes
	var wantDropped int64
	for i, size := range ringSizes {
		if i%2 == 0 {
			b.push(i, size)
		} else {
			*b.put(size) = i
		}
		want = append(want, i)
		for len(want) > 1 && (len(want) > 4 || bytesOf(want) > 10) {
			want, wantDropped = want[1:], wantDropped+1
		}
		var got []int
		for j := range b.n {
			got = append(got, *b.at(j))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || b.dropped != wantDropped {
			t.Fatalf("after item %d (%d bytes): %v, %d dropped; want %v, %d", i, size, got, b.dropped, want, wantDropped)
		}
	}
}

// ringSizes are the sizes of the items TestRing pushes, by index.
var ringSizes = []int64{3, 3, 3, 3, 5, 1, 1, 12, 2, 2}

// bytesOf is the size of the items of ringSizes.
func bytesOf(items []int) int64 {
	var n int64
	for _, i := range items {
		n += ringSizes[i]
	}
	return n
}
