//go:build !unix

package proxy

import "io"

// rawFile is the Unix fast path; elsewhere streams are used as they are.
type rawFile struct{ io.ReadWriter }

func newRawFile(any) *rawFile { return nil }
func (*rawFile) stop()        {}
func (*rawFile) release()     {}
