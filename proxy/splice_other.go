//go:build !linux

package proxy

// Elsewhere every chunk goes by read and write (splice and tee are Linux's).

type splicer struct{}

func newSplicer(*forwarder, int32) *splicer { return nil }

func (*splicer) wantSplice() bool     { return false }
func (*splicer) copied(int)           {}
func (*splicer) take(int) []byte      { return nil }
func (*splicer) closeWrite()          {}
func (*splicer) closeRead()           {}
func (*splicer) splicedBytes() int64  { return 0 }
func (*splicer) behind() (int64, int) { return 0, 0 }

func (*forwarder) spliceStep(int64) (int, error, error) { return 0, nil, nil }
