//go:build !unix

package atomicfile_test

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
