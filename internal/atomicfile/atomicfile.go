// Package atomicfile writes a file so that a reader sees its old or its new
// content, never a mix: the status files of the proxy and the fake's report,
// which other processes read while they are rewritten.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes b to a hidden temporary file beside path and renames it over
// path. On any error the temporary file is removed and path is unchanged.
func Write(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
