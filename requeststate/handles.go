package requeststate

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/lru"
)

// Bounds of [Handles].
const (
	// DefaultHandleTTL is how long a handle lives when HandlesConfig.TTL
	// is zero.
	DefaultHandleTTL = time.Hour
	// DefaultMaxHandles bounds the handles kept when
	// HandlesConfig.MaxEntries is zero.
	DefaultMaxHandles = 10000
	// maxHandleLen bounds a handle looked up.
	maxHandleLen = 64
)

// ErrUnknownHandle is what [Handles.Get] returns for a handle that does
// not exist, has expired, was deleted, or belongs to another owner: the
// cases are not told apart, so a handle of another user reveals nothing.
var ErrUnknownHandle = errors.New("requeststate: unknown handle")

// Owner is whom a handle belongs to: the issuer and subject of the
// verified access token of the request that created it.
type Owner struct {
	Issuer, Subject string
}

// HandlesConfig configures [NewHandles].
type HandlesConfig struct {
	// MaxEntries bounds the handles kept; the least recently used goes
	// first. Zero means [DefaultMaxHandles].
	MaxEntries int
	// TTL is how long a handle lives after Put. Zero means
	// [DefaultHandleTTL].
	TTL time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Handles keeps values under handles (random, URL-safe strings a client may
// hold) in memory, each keyed by its owner: [Handles.Get] finds a value
// only for the owner who put it, so a handle is never a credential. A
// server sharing state across replicas stores values in its own storage
// under [HandleKey] instead. It is safe for concurrent use.
type Handles[T any] struct {
	cache *lru.Cache[[sha256.Size]byte, T]
	ttl   time.Duration
	now   clock.Func
}

// NewHandles validates cfg. It starts no goroutine.
func NewHandles[T any](cfg HandlesConfig) (*Handles[T], error) {
	if cfg.MaxEntries < 0 || cfg.TTL < 0 {
		return nil, errors.New("requeststate: negative handle bound")
	}
	n := cfg.MaxEntries
	if n == 0 {
		n = DefaultMaxHandles
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = DefaultHandleTTL
	}
	return &Handles[T]{cache: lru.New[[sha256.Size]byte, T](n, cfg.Now, nil), ttl: ttl, now: cfg.Now}, nil
}

// Put stores v for owner and returns its new handle.
func (h *Handles[T]) Put(owner Owner, v T) (string, error) {
	if owner.Issuer == "" || owner.Subject == "" {
		return "", fmt.Errorf("%w: a handle needs an owner", ErrBinding)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	handle := base64.RawURLEncoding.EncodeToString(b)
	h.cache.Add(handleKey(owner, handle), v, h.now.Now().Add(h.ttl))
	return handle, nil
}

// Get returns the value owner put under handle, or [ErrUnknownHandle].
func (h *Handles[T]) Get(owner Owner, handle string) (T, error) {
	var zero T
	if owner.Issuer == "" || owner.Subject == "" || handle == "" || len(handle) > maxHandleLen {
		return zero, ErrUnknownHandle
	}
	v, ok := h.cache.Get(handleKey(owner, handle))
	if !ok {
		return zero, ErrUnknownHandle
	}
	return v, nil
}

// Delete removes owner's handle; another owner's is left alone.
func (h *Handles[T]) Delete(owner Owner, handle string) {
	if len(handle) <= maxHandleLen {
		h.cache.Remove(handleKey(owner, handle))
	}
}

// HandleKey is the storage key of owner's handle: a hex SHA-256 of the
// owner and the handle, so that a server keeping handles in its own
// storage looks them up only under the verified owner of the request.
func HandleKey(owner Owner, handle string) string {
	k := handleKey(owner, handle)
	return fmt.Sprintf("%x", k[:])
}

func handleKey(owner Owner, handle string) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range [...]string{"mcpauth state handle", owner.Issuer, owner.Subject, handle} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return [sha256.Size]byte(h.Sum(nil))
}
