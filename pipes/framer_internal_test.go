package pipes

import "testing"

// TestFrameCountFlush crosses every field's flush point of the packed word,
// and a byte count too large to pack, and checks the totals stay exact.
func TestFrameCountFlush(t *testing.T) {
	var c frameCount
	var frames, n, crs int64
	add := func(f, b, r uint64) {
		t.Helper()
		c.add(f, b, r)
		frames, n, crs = frames+int64(f), n+int64(b), crs+int64(r)
		if gf, gn, gr := c.load(); gf != frames || gn != n || gr != crs {
			t.Fatalf("after add(%d, %d, %d): load() = %d, %d, %d; want %d, %d, %d", f, b, r, gf, gn, gr, frames, n, crs)
		}
	}
	for i := range 3 * 8192 {
		add(1, uint64(i%300), uint64(i%2))
	}
	for range 3 * 8192 {
		add(0, 0, 1) // '\r's alone, as of empty lines
	}
	add(1, 1<<34, 0)   // too large to pack
	add(1, 1<<34-1, 1) // packs, and sets the bytes field's top bit
	add(1, 1<<35, 0)   // too large again
	for range 3 {
		add(1, 1<<33, 1) // fills the bytes field in a few steps
	}
}
