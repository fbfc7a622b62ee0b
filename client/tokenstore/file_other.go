//go:build !windows

package tokenstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// checkPrivate refuses anything but a regular file only its owner can
// read and write.
func checkPrivate(file *os.File) (os.FileInfo, error) {
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v", ErrInsecureFile, filepath.Base(file.Name()), fi.Mode())
	}
	return fi, nil
}

// makePrivate is a no-op: the file was created with mode 0600.
func makePrivate(*os.File) error { return nil }

// replaceFile renames src over dst atomically.
func replaceFile(_ context.Context, src, dst string) error { return os.Rename(src, dst) }
