package pipes

import (
	"runtime"
	"sync/atomic"
)

// frameCount counts frames, their bytes and the '\r's of their terminators,
// so that Stats sees all three of a frame at once. The writer keeps its own
// copy of the recent counts (local) and publishes it with one atomic store
// per frame. Recent counts are packed into one
// word; when a field of it reaches its top bit (8,192 frames or '\r's, or
// 32 GiB), the word is moved into the totals under a sequence lock.
type frameCount struct {
	packed             atomic.Uint64 // since the last flush: see the pack constants
	seq                atomic.Uint64 // odd while a flush runs
	frames, bytes, crs atomic.Int64  // totals as of the last flush
	local              uint64        // the writer's copy of packed
}

// The packed word: bytes in bits 0-35, frames in 36-49, '\r's in 50-63. A
// field is flushed once its top bit is set, before it can overflow.
const (
	packFrameShift = 36
	packCRShift    = 50
	packTopBits    = 1<<(packFrameShift-1) | 1<<(packCRShift-1) | 1<<63
	packBigN       = 1 << (packFrameShift - 2) // larger byte counts go straight to the totals
)

// add counts frames frames (0 or 1) of n bytes in all, and crs '\r's (0 or
// 1). Only the goroutine calling Next calls it.
func (c *frameCount) add(frames, n, crs uint64) {
	if p := c.local + frames<<packFrameShift + n + crs<<packCRShift; n < packBigN && p&packTopBits == 0 {
		c.local = p
		c.packed.Store(p)
		return
	}
	c.flush(frames, n, crs)
}

// flush moves the packed counts, and the given ones, into the totals.
func (c *frameCount) flush(frames, n, crs uint64) {
	p := c.local
	c.seq.Add(1)
	c.frames.Add(int64(p>>packFrameShift&(1<<(packCRShift-packFrameShift)-1) + frames))
	c.bytes.Add(int64(p&(1<<packFrameShift-1) + n))
	c.crs.Add(int64(p>>packCRShift + crs))
	c.packed.Store(0)
	c.seq.Add(1)
	c.local = 0
}

// load returns the published counts; any goroutine may call it.
func (c *frameCount) load() (frames, n, crs int64) {
	for {
		if s := c.seq.Load(); s&1 == 0 {
			p := c.packed.Load()
			frames, n, crs = c.frames.Load(), c.bytes.Load(), c.crs.Load()
			if c.seq.Load() == s {
				return frames + int64(p>>packFrameShift&(1<<(packCRShift-packFrameShift)-1)), n + int64(p&(1<<packFrameShift-1)), crs + int64(p>>packCRShift)
			}
		}
		runtime.Gosched() // a flush is running: it is a few instructions long
	}
}
