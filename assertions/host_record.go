package assertions

import (
	"errors"
	"fmt"
	"os"
)

// recordErr is the harness's error if it could not record what the fake
// saw: the fake could not write its report (fakeReport), or there is none
// and the harness cannot write in the fixture's directory either
// (probeDir). Nil otherwise.
func (r *hostFixture) recordErr() error {
	if r.dirErr != nil {
		return nil // the fixture started nothing
	}
	_, err := r.fakeReport()
	if errors.As(err, new(*harnessError)) {
		return err
	}
	if len(r.reportFiles()) == 0 {
		return probeDir(r.dir)
	}
	return nil
}

// probeDir tells whether a report could be written in dir, the fixture's
// directory, when none is there: where the fake can make no file at all
// (a read-only file system), it leaves no trace of its failure, and the
// harness's own write then fails alike. The error is a harnessError.
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err == nil {
		_, err = f.Write(make([]byte, 4096))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		os.Remove(f.Name())
	}
	if err != nil {
		return &harnessError{fmt.Errorf("no report from the fake in %s, where the harness cannot write either, so whether the host started the fake is not known: %w", dir, err)}
	}
	return nil
}
