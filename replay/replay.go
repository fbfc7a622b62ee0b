package replay

import (
	"context"
	"errors"
	"time"
)

// Store records single-use keys until they expire.
//
// Use records key until the instant until and returns nil, or returns
// [ErrReplayed] (or an error wrapping it) if key was recorded before and
// has not expired: the verifier then refuses the JWT as replayed. Any other
// error refuses the JWT as a temporary failure (fail closed), so a store
// must never return nil for a key it could not record. A key whose until
// is at or before the current time need not be recorded: such a JWT could
// not be accepted anyway.
//
// Implementations must be safe for concurrent use: of any number of
// concurrent calls with one key, at most one returns nil. Keys are at most
// a few hundred bytes and may hold any byte; the verifiers namespace them.
type Store interface {
	Use(ctx context.Context, key string, until time.Time) error
}

// Errors of a [Store].
var (
	// ErrReplayed is what Use returns, or wraps, for a key recorded before
	// that has not expired.
	ErrReplayed = errors.New("replay: identifier already used")
	// ErrFull is what Use returns when the store holds its maximum number
	// of live entries and cannot record one more; the JWT is refused as a
	// temporary failure rather than a live key forgotten.
	ErrFull = errors.New("replay: store full")
)
