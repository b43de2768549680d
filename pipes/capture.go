package pipes

import (
	"fmt"
	"sync"
)

// Capture is an io.Writer that never blocks and never fails. It keeps the
// first and the last bytes written, within its limit, and counts and drops
// the rest. It is how a program drains a child's stdout and stderr so that
// the child can never block on a full pipe, however much it writes:
//
//	out := pipes.NewCapture(4096)
//	cmd.Stdout = out
//
// A Capture is safe for concurrent use.
type Capture struct {
	mu      sync.Mutex
	headMax int
	head    []byte
	tail    []byte // ring buffer of at most tailMax bytes once full
	tailMax int
	tailPos int // next write position in tail once it is full
	total   int64
}

// NewCapture returns a Capture that keeps at most limit bytes: the first
// limit/2 bytes and the last limit - limit/2. A limit below 0 is taken as 0
// (only counting).
func NewCapture(limit int) *Capture {
	limit = max(limit, 0)
	return &Capture{headMax: limit / 2, tailMax: limit - limit/2}
}

// Write keeps what fits in the head and the tail and counts everything. It
// always returns len(p), nil.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if c.tailMax == 0 || len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax { // only the last tailMax bytes can survive
		c.tail = append(c.tail[:0], p[len(p)-c.tailMax:]...)
		c.tailPos = 0
		return n, nil
	}
	if room := c.tailMax - len(c.tail); room > 0 {
		k := min(room, len(p))
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 { // the ring is full: overwrite the oldest bytes
		k := copy(c.tail[c.tailPos:], p)
		p = p[k:]
		c.tailPos = (c.tailPos + k) % c.tailMax
	}
	return n, nil
}

// Total returns the number of bytes written, kept or not.
func (c *Capture) Total() int64 { return locked(&c.mu, func() int64 { return c.total }) }

// Dropped returns the number of bytes written and not kept.
func (c *Capture) Dropped() int64 {
	return locked(&c.mu, func() int64 { return c.total - int64(len(c.head)+len(c.tail)) })
}

// Truncated reports whether any byte was dropped.
func (c *Capture) Truncated() bool { return c.Dropped() > 0 }

// Bytes returns a copy of the kept bytes, the head followed by the tail, with
// nothing marking where bytes were dropped; see String for that.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]byte, 0, len(c.head)+len(c.tail))
	out = append(out, c.head...)
	return c.appendTail(out)
}

// appendTail appends the tail in write order; c.mu must be held.
func (c *Capture) appendTail(out []byte) []byte {
	out = append(out, c.tail[c.tailPos:]...)
	return append(out, c.tail[:c.tailPos]...)
}

// String returns the kept bytes as text, with a marker such as
// "\n[… 1048576 bytes dropped …]\n" between head and tail where bytes were
// dropped.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	dropped := c.total - int64(len(c.head)+len(c.tail))
	out := append([]byte(nil), c.head...)
	if dropped > 0 {
		out = fmt.Appendf(out, "\n[… %d bytes dropped …]\n", dropped)
	}
	return string(c.appendTail(out))
}
