package mcptest

// ring keeps the newest items within a count and a byte budget: adding
// beyond either drops the oldest. It is how the session bounds every store
// it keeps (notifications, junk, transcript). Not safe for concurrent use.
type ring[T any] struct {
	items    []T
	sizes    []int64
	start, n int
	bytes    int64
	maxBytes int64 // 0: no byte budget

	dropped int64 // items dropped to make room
}

func newRing[T any](count int, maxBytes int64) *ring[T] {
	return &ring[T]{items: make([]T, count), sizes: make([]int64, count), maxBytes: maxBytes}
}

// push adds v, of size bytes, dropping the oldest items to make room; an
// item larger than the whole byte budget is still kept, alone. Dropped items
// are cleared, so that what they held can be collected.
func (r *ring[T]) push(v T, size int64) { *r.put(size) = v }

// put makes room for an item of size bytes, as push does, and returns the
// slot to fill. When the ring was full by count, the slot is the oldest
// item's and still holds it, so that its buffers can be reused; other items
// dropped are cleared, and any other slot is empty.
func (r *ring[T]) put(size int64) *T {
	if r.n == len(r.items) && (r.maxBytes == 0 || r.bytes-r.sizes[r.start]+size <= r.maxBytes) {
		return r.rotate(size) // full by count only: a flood's case
	}
	var zero T
	for r.n > 0 && (r.n == len(r.items) || (r.maxBytes > 0 && r.bytes+size > r.maxBytes)) {
		if r.n < len(r.items) { // a full ring's oldest slot is the one put returns
			r.items[r.start] = zero
		}
		r.drop()
	}
	return r.add(size)
}

// slot makes room for an item of size bytes, as push does, and returns the
// slot to fill. The slot still holds what was last in it, so that its
// buffers can be reused: only for rings without a byte budget, whose only
// drop is that very slot.
func (r *ring[T]) slot(size int64) *T {
	if r.n == len(r.items) {
		return r.rotate(size)
	}
	return r.add(size)
}

// rotate drops the oldest item of a full ring and adds one of size bytes
// in its slot, in one step: the oldest slot becomes the newest.
func (r *ring[T]) rotate(size int64) *T {
	i := r.start
	if r.start++; r.start == len(r.items) {
		r.start = 0
	}
	r.dropped++
	r.bytes += size - r.sizes[i]
	r.sizes[i] = size
	return &r.items[i]
}

func (r *ring[T]) drop() {
	r.bytes -= r.sizes[r.start]
	r.sizes[r.start] = 0
	if r.start++; r.start == len(r.items) {
		r.start = 0
	}
	r.n--
	r.dropped++
}

func (r *ring[T]) add(size int64) *T {
	i := r.index(r.n)
	r.sizes[i] = size
	r.n++
	r.bytes += size
	return &r.items[i]
}

// at returns a pointer to the i-th oldest item.
func (r *ring[T]) at(i int) *T { return &r.items[r.index(i)] }

// index is the position in items of the i-th oldest item, 0 <= i <=
// len(items): a subtraction, not a division, on the flood's path.
func (r *ring[T]) index(i int) int {
	if i += r.start; i >= len(r.items) {
		i -= len(r.items)
	}
	return i
}

// resize records that the i-th oldest item now holds size bytes.
func (r *ring[T]) resize(i int, size int64) {
	j := r.index(i)
	r.bytes += size - r.sizes[j]
	r.sizes[j] = size
}
