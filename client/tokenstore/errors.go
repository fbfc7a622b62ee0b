package tokenstore

import "errors"

// Sentinel errors; test with errors.Is. Messages never contain a token or
// secret.
var (
	// ErrNotFound: no entry under the key asked for.
	ErrNotFound = errors.New("tokenstore: not found")
	// ErrInsecureFile: the store file or its lock file can be read or
	// written by other users (mode wider than 0600), or is not a regular
	// file; the store refuses to use it.
	ErrInsecureFile = errors.New("tokenstore: store file permissions are too open")
	// ErrCorrupt: the store file is not a store document.
	ErrCorrupt = errors.New("tokenstore: store file is corrupt")
	// ErrInvalid: an entry to store lacks its key fields.
	ErrInvalid = errors.New("tokenstore: invalid entry")
	// ErrLockUnsupported: file locking is not available on this platform.
	ErrLockUnsupported = errors.New("tokenstore: file locking is not supported on this platform")
)
