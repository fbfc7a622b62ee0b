//go:build !unix

package tokenstore

import (
	"context"
	"os"
)

func flock(context.Context, *os.File, bool) error { return ErrLockUnsupported }

func funlock(*os.File) error { return ErrLockUnsupported }
