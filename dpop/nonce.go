package dpop

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// NonceHeader is the response header that carries a server-provided nonce
// (RFC 9449 §8, §9).
const NonceHeader = "DPoP-Nonce"

// NonceSource issues and checks server-provided DPoP nonces (RFC 9449 §8,
// §9). Implementations must be safe for concurrent use.
type NonceSource interface {
	// Nonce returns a nonce to send in the DPoP-Nonce response header.
	Nonce(ctx context.Context) (string, error)
	// CheckNonce returns nil if nonce is currently acceptable and an error
	// (ErrNonceInvalid or one wrapping it) otherwise.
	CheckNonce(ctx context.Context, nonce string) error
}

// DefaultNoncePeriod is the rotation period of server nonces when none is
// configured.
const DefaultNoncePeriod = 5 * time.Minute

// HMACNonceConfig configures [HMACNonces].
type HMACNonceConfig struct {
	// Key authenticates the nonces: at least 32 random bytes, the same on
	// every instance that must accept each other's nonces. Required.
	Key []byte
	// Label separates nonce families that share a key: a nonce minted under
	// one label is never accepted under another. Use different labels (or
	// keys) for the authorization server and each resource server (RFC 9449
	// §9: nonces are specific to the server that issued them). Empty means
	// "dpop-nonce".
	Label string
	// Period is the rotation interval. A nonce is accepted in the period it
	// was issued in and the next one, so it lives between Period and
	// 2×Period. Zero means [DefaultNoncePeriod]; it must be at least one
	// second.
	Period time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// HMACNonces is a stateless [NonceSource]: a nonce is the number of the
// current time period followed by an HMAC-SHA-256 over it, so any instance
// with the key can check it and nothing is stored. It is safe for concurrent
// use.
type HMACNonces struct {
	key    []byte
	label  string
	period int64 // nanoseconds
	now    clock.Func
}

// nonceMACBytes is the truncated MAC length (128 bits).
const nonceMACBytes = 16

// nonceLen is the length of an encoded nonce: base64url of 8 + 16 bytes.
const nonceLen = 32

// NewHMACNonces validates cfg and returns the nonce source.
func NewHMACNonces(cfg HMACNonceConfig) (*HMACNonces, error) {
	if len(cfg.Key) < 32 {
		return nil, errors.New("dpop: HMAC nonce key must be at least 32 bytes")
	}
	period := cmp.Or(cfg.Period, DefaultNoncePeriod)
	if period < time.Second {
		return nil, errors.New("dpop: HMAC nonce period must be at least one second")
	}
	return &HMACNonces{key: bytes.Clone(cfg.Key), label: cmp.Or(cfg.Label, "dpop-nonce"), period: int64(period), now: cfg.Now}, nil
}

func (n *HMACNonces) bucket() uint64 {
	t := n.now.Now().UnixNano()
	if t < 0 {
		return 0
	}
	return uint64(t / n.period)
}

func (n *HMACNonces) mint(bucket uint64) string {
	var buf [8 + nonceMACBytes]byte
	binary.BigEndian.PutUint64(buf[:8], bucket)
	m := hmac.New(sha256.New, n.key)
	m.Write([]byte(n.label))
	m.Write([]byte{0})
	m.Write(buf[:8])
	copy(buf[8:], m.Sum(nil))
	return base64.RawURLEncoding.EncodeToString(buf[:])
}

// Nonce implements [NonceSource]. It never fails.
func (n *HMACNonces) Nonce(context.Context) (string, error) {
	return n.mint(n.bucket()), nil
}

// CheckNonce implements [NonceSource]: nonce must be one minted with this
// key and label in the current or the previous period.
func (n *HMACNonces) CheckNonce(_ context.Context, nonce string) error {
	if len(nonce) != nonceLen {
		return ErrNonceInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(nonce)
	if err != nil || len(raw) != 8+nonceMACBytes {
		return ErrNonceInvalid
	}
	b := binary.BigEndian.Uint64(raw[:8])
	cur := n.bucket()
	if b != cur && b+1 != cur {
		return ErrNonceInvalid
	}
	if !hmac.Equal([]byte(n.mint(b)), []byte(nonce)) {
		return ErrNonceInvalid
	}
	return nil
}

// validNonceSyntax reports whether s is 1*NQCHAR (RFC 9449 §8.1):
// %x21 / %x23-5B / %x5D-7E, the alphabet of a scope token.
func validNonceSyntax(s string) bool { return len(s) <= 1024 && oauthmeta.ValidScopeToken(s) }
