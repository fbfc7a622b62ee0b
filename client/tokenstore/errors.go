package tokenstore

import "errors"

// Sentinel errors; test with errors.Is. Messages never contain a token or
// secret.
var (
	// ErrNotFound: no entry under the key asked for.
	ErrNotFound = errors.New("tokenstore: not found")
	// ErrInsecureFile: the store file or its lock file can be read or
	// written by other users (mode wider than 0600; on Windows, an access
	// control list granting another user more than reading attributes), or
	// is not a regular file; the store refuses to use it.
	ErrInsecureFile = errors.New("tokenstore: store file permissions are too open")
	// ErrCorrupt: the store file is not a store document.
	ErrCorrupt = errors.New("tokenstore: store file is corrupt")
	// ErrInvalid: an entry to store lacks its key fields.
	ErrInvalid = errors.New("tokenstore: invalid entry")
	// ErrLockUnsupported: file locking is not available on this platform
	// (it is on Unix and Windows; not on plan9, js/wasm or wasip1).
	ErrLockUnsupported = errors.New("tokenstore: file locking is not supported on this platform")
)
