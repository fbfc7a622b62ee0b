package requeststate

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/seal"
	"github.com/mcpauth/mcpauth/replay"
)

// Bounds of a state.
const (
	// DefaultTTL is how long a state opens when Config.TTL is zero: long
	// enough for a user to connect an account in a browser.
	DefaultTTL = 15 * time.Minute
	// MaxTTL bounds Config.TTL.
	MaxTTL = 24 * time.Hour
	// MaxData bounds the application data a state carries.
	MaxData = 2 << 10
	// MaxStateLen bounds the encoded state [Sealer.Open] reads; anything
	// longer is refused before it is decoded.
	MaxStateLen = 8 << 10
	// KeySize is the size of a key: 32 random bytes (AES-256).
	KeySize = seal.KeySize
)

// sealContext is the AEAD's additional data: a state opens only as a
// requestState of this package, never as another sealed value.
const sealContext = "mcpauth requestState v1"

// Config configures [New].
type Config struct {
	// Key seals new states: 32 random bytes, shared by every replica that
	// may receive the retry. Required.
	Key []byte
	// OldKeys still open states sealed before a key rotation.
	OldKeys [][]byte
	// TTL is how long a state opens after it is sealed. Zero means
	// [DefaultTTL]; at most [MaxTTL].
	TTL time.Duration
	// Replay, when set, makes every state single use: [Sealer.Open]
	// records it until it expires and refuses it the second time with
	// [ErrReplayed]. Replicas must share it (package redisreplay). Nil
	// means a state opens as often as it is presented until it expires,
	// bound to its user, client and request.
	Replay replay.Store
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Binding is what a state is bound to: the request it was made for, as the
// server verified it. Issuer, Subject and ClientID come from the verified
// access token (never from the request's body); Method, Name and Arguments
// from the request being answered.
type Binding struct {
	// Issuer, Subject and ClientID identify the user and the MCP client:
	// the token's "iss", "sub" and "client_id". Required.
	Issuer, Subject, ClientID string
	// Method is the request's method, e.g. "tools/call". Required.
	Method string
	// Name is the tool or prompt name, or the resource URI.
	Name string
	// Arguments are the request's arguments as JSON. Only their digest is
	// sealed; members are compared whatever their order or spacing. Nil,
	// "null" and "{}" are the same.
	Arguments json.RawMessage
}

// Sealer seals and opens states. It is safe for concurrent use.
type Sealer struct {
	ring   *seal.Ring
	ttl    time.Duration
	replay replay.Store
	now    clock.Func
}

// New validates cfg. It does no I/O.
func New(cfg Config) (*Sealer, error) {
	if cfg.TTL < 0 || cfg.TTL > MaxTTL {
		return nil, fmt.Errorf("requeststate: TTL must be between 0 and %s", MaxTTL)
	}
	ring, err := seal.NewRing(cfg.Key, cfg.OldKeys...)
	if err != nil {
		return nil, fmt.Errorf("requeststate: %w", err)
	}
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	return &Sealer{ring: ring, ttl: ttl, replay: cfg.Replay, now: cfg.Now}, nil
}

// payload is the sealed content. Short member names keep states small.
type payload struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	ClientID  string `json:"cid"`
	Method    string `json:"m"`
	Name      string `json:"n"`
	Arguments []byte `json:"a"` // SHA-256 of the canonical arguments
	Expiry    int64  `json:"exp"`
	ID        []byte `json:"jti"`
	Data      []byte `json:"d,omitempty"`
}

// Seal returns a state for b carrying data (at most [MaxData] bytes,
// opaque to this package; it is encrypted, so it may name things the
// client must not read). The state is URL-safe base64.
func (s *Sealer) Seal(b Binding, data []byte) (string, error) {
	if err := b.check(); err != nil {
		return "", err
	}
	if len(data) > MaxData {
		return "", fmt.Errorf("requeststate: data over %d bytes", MaxData)
	}
	digest, err := argumentsDigest(b.Arguments)
	if err != nil {
		return "", fmt.Errorf("%w: arguments: %w", ErrBinding, err)
	}
	p := payload{Issuer: b.Issuer, Subject: b.Subject, ClientID: b.ClientID, Method: b.Method, Name: b.Name,
		Arguments: digest, Expiry: s.now.Now().Add(s.ttl).Unix(), ID: make([]byte, 16), Data: data}
	_, _ = rand.Read(p.ID)
	pt, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("requeststate: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(s.ring.Seal(pt, sealContext)), nil
}

// Open verifies state against b, the binding of the request it came back
// on, and returns the data it was sealed with. It checks, in order, that
// the state authenticates, has not expired and was sealed for b, and then
// (with a replay store) records it, so that a state presented by the wrong
// user is refused without being used up. Every error wraps [ErrRefused]
// and one reason: [ErrMalformed], [ErrExpired], [ErrMismatch] (a
// [*MismatchError]), [ErrReplayed] or [ErrUnavailable].
func (s *Sealer) Open(ctx context.Context, state string, b Binding) ([]byte, error) {
	if state == "" || len(state) > MaxStateLen {
		return nil, refused(ErrMalformed)
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		return nil, refused(ErrMalformed)
	}
	pt, err := s.ring.Open(raw, sealContext)
	if err != nil {
		return nil, refused(ErrMalformed)
	}
	var p payload
	dec := json.NewDecoder(bytes.NewReader(pt))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || len(p.ID) != 16 {
		return nil, refused(ErrMalformed)
	}
	exp := time.Unix(p.Expiry, 0)
	if !s.now.Now().Before(exp) {
		return nil, refused(ErrExpired)
	}
	if err := b.check(); err != nil {
		return nil, &MismatchError{Field: "binding"}
	}
	digest, err := argumentsDigest(b.Arguments)
	if err != nil {
		return nil, &MismatchError{Field: "arguments"}
	}
	for _, c := range [...]struct {
		field     string
		got, want string
	}{
		{"issuer", p.Issuer, b.Issuer}, {"subject", p.Subject, b.Subject}, {"client", p.ClientID, b.ClientID},
		{"method", p.Method, b.Method}, {"name", p.Name, b.Name}, {"arguments", string(p.Arguments), string(digest)},
	} {
		if c.got != c.want {
			return nil, &MismatchError{Field: c.field}
		}
	}
	if s.replay != nil {
		err := s.replay.Use(ctx, "requeststate\x00"+string(p.ID), exp)
		switch {
		case errors.Is(err, replay.ErrReplayed):
			return nil, refused(ErrReplayed)
		case err != nil:
			return nil, refused(ErrUnavailable)
		}
	}
	return p.Data, nil
}

func (b *Binding) check() error {
	if b.Issuer == "" || b.Subject == "" || b.ClientID == "" || b.Method == "" {
		return fmt.Errorf("%w: issuer, subject, client and method are required", ErrBinding)
	}
	return nil
}

// argumentsDigest is the SHA-256 of the arguments re-encoded canonically:
// object members sorted, no insignificant space, numbers as written.
func argumentsDigest(args json.RawMessage) ([]byte, error) {
	canon := []byte("{}")
	if t := bytes.TrimSpace(args); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if dec.More() {
			return nil, errors.New("trailing data")
		}
		var err error
		if canon, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(canon)
	return sum[:], nil
}

// ParseKey decodes a key written as base64 (standard or URL alphabet,
// padded or not) of exactly [KeySize] bytes, as operators keep it.
func ParseKey(s string) ([]byte, error) { return seal.ParseKey(s) }
