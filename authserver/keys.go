package authserver

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

// supportedAlgorithm reports whether this server can sign with alg.
func supportedAlgorithm(alg string) bool {
	return slices.Contains(jwa.Defaults(jwa.ServerToken), alg)
}

// liveKey is a signing key ready to use.
type liveKey struct {
	meta    SigningKey
	signer  jose.Signer
	public  jose.JSONWebKey
	private crypto.Signer // for JWTs of other types (ID-JAGs), signed by go-jose through package jwtassert
}

// keyring holds the signing keys and their schedule:
// a new key is published KeyPrePublish before it signs, and a retired key
// stays published until every token it signed has expired. It is safe for
// concurrent use.
type keyring struct {
	alg         string
	store       KeyStore
	prePublish  time.Duration
	rotateEvery time.Duration
	tokenTTL    time.Duration
	reloadEvery time.Duration

	lastReload atomic.Int64 // UnixNano of the last read of the store
	mu         sync.RWMutex
	keys       []*liveKey // ordered by ActiveAt
}

// load reads the stored keys and makes sure one with the configured
// algorithm signs now.
func (k *keyring) load(ctx context.Context, now time.Time) error {
	keys, err := k.read(ctx)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = keys
	k.lastReload.Store(now.UnixNano())
	if cur := k.current(now); cur != nil && cur.meta.Algorithm == k.alg {
		return nil
	}
	// No usable key for the configured algorithm: start one now and retire
	// the others at once (they stay published until their tokens expire).
	return k.add(ctx, now, now)
}

func sortKeys(keys []*liveKey) {
	slices.SortStableFunc(keys, func(a, b *liveKey) int {
		if c := a.meta.ActiveAt.Compare(b.meta.ActiveAt); c != 0 {
			return c
		}
		return strings.Compare(a.meta.ID, b.meta.ID)
	})
}

// parseSigningKeys turns stored keys into usable ones, ordered by ActiveAt
// (then ID, so every replica orders them alike). Each key that has a
// successor retires when the successor starts signing, even if the
// replica that added the successor did not know it (two replicas that
// started on an empty store at the same moment): replicas sharing a store
// agree on the one current key.
func parseSigningKeys(stored []*SigningKey) ([]*liveKey, error) {
	keys := make([]*liveKey, 0, len(stored))
	for _, sk := range stored {
		lk, err := parseSigningKey(sk)
		if err != nil {
			return nil, err
		}
		keys = append(keys, lk)
	}
	sortKeys(keys)
	for i := 0; i+1 < len(keys); i++ {
		m, next := &keys[i].meta, keys[i+1].meta.ActiveAt
		if m.RetireAt.IsZero() || m.RetireAt.After(next) {
			m.RetireAt = next
		}
	}
	return keys, nil
}

// read returns the stored keys, ready to use.
func (k *keyring) read(ctx context.Context) ([]*liveKey, error) {
	stored, err := k.store.SigningKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("authserver: reading signing keys: %w", err)
	}
	return parseSigningKeys(stored)
}

// maybeReload reads the keys back from the store at most once per
// reloadEvery, to pick up what other replicas sharing the store added,
// retired or deleted. A failed read keeps the keys in hand.
func (k *keyring) maybeReload(ctx context.Context, now time.Time) error {
	last := k.lastReload.Load()
	if now.UnixNano()-last < int64(k.reloadEvery) || !k.lastReload.CompareAndSwap(last, now.UnixNano()) {
		return nil
	}
	keys, err := k.read(ctx)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if cur := currentIn(keys, now); cur == nil || cur.meta.Algorithm != k.alg {
		// The store lost this replica's signing key (or holds another
		// algorithm's): keep signing with the keys in hand until a
		// rotation adds one.
		return nil
	}
	k.keys = keys
	return nil
}

// current returns the newest key that signs at now. Callers hold mu.
func (k *keyring) current(now time.Time) *liveKey { return currentIn(k.keys, now) }

func currentIn(keys []*liveKey, now time.Time) *liveKey {
	for i := len(keys) - 1; i >= 0; i-- {
		m := &keys[i].meta
		if !m.ActiveAt.After(now) && (m.RetireAt.IsZero() || m.RetireAt.After(now)) {
			return keys[i]
		}
	}
	return nil
}

// rotationDue reports whether automatic rotation should schedule a key.
// Callers hold mu.
func (k *keyring) rotationDue(now time.Time) bool {
	if k.rotateEvery <= 0 || len(k.keys) == 0 {
		return false
	}
	newest := k.keys[len(k.keys)-1]
	return !newest.meta.CreatedAt.Add(k.rotateEvery).After(now)
}

// signingKey returns the key to sign with at now, rotating first when
// automatic rotation is due.
func (k *keyring) signingKey(ctx context.Context, now time.Time) (*liveKey, error) {
	k.mu.RLock()
	cur, due := k.current(now), k.rotationDue(now)
	k.mu.RUnlock()
	if due {
		k.mu.Lock()
		var err error
		if k.rotationDue(now) {
			err = k.add(ctx, now, now.Add(k.prePublish))
		}
		cur = k.current(now)
		k.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	if cur == nil {
		return nil, fmt.Errorf("authserver: no signing key is active")
	}
	return cur, nil
}

// rotate schedules a new key that signs from now+prePublish.
func (k *keyring) rotate(ctx context.Context, now time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.add(ctx, now, now.Add(k.prePublish))
}

// add creates a key active from activeAt, retires every earlier key at
// activeAt, saves the changes and drops keys whose tokens have all expired.
// Callers hold mu.
func (k *keyring) add(ctx context.Context, now, activeAt time.Time) error {
	lk, err := generateSigningKey(k.alg, now, activeAt)
	if err != nil {
		return err
	}
	if err := k.store.SaveSigningKey(ctx, &lk.meta); err != nil {
		return fmt.Errorf("authserver: saving signing key: %w", err)
	}
	kept := k.keys[:0]
	for _, old := range k.keys {
		if old.meta.RetireAt.IsZero() || old.meta.RetireAt.After(activeAt) {
			old.meta.RetireAt = activeAt
			if err := k.store.SaveSigningKey(ctx, &old.meta); err != nil {
				return fmt.Errorf("authserver: saving signing key: %w", err)
			}
		}
		if k.expired(old, now) {
			if err := k.store.DeleteSigningKey(ctx, old.meta.ID); err != nil {
				return fmt.Errorf("authserver: deleting signing key: %w", err)
			}
			continue
		}
		kept = append(kept, old)
	}
	k.keys = append(kept, lk)
	sortKeys(k.keys)
	return nil
}

// expired reports whether every token lk signed has expired at now.
func (k *keyring) expired(lk *liveKey, now time.Time) bool {
	r := lk.meta.RetireAt
	return !r.IsZero() && r.Add(k.tokenTTL+time.Minute).Before(now)
}

// jwks returns the JSON Web Key Set to publish at now: pending, active and
// retired keys whose tokens may still be valid.
func (k *keyring) jwks(now time.Time) jose.JSONWebKeySet {
	k.mu.RLock()
	defer k.mu.RUnlock()
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(k.keys))}
	for i := len(k.keys) - 1; i >= 0; i-- {
		if !k.expired(k.keys[i], now) {
			set.Keys = append(set.Keys, k.keys[i].public)
		}
	}
	return set
}

// verificationKey returns the public key with kid, if it is still
// published at now.
func (k *keyring) verificationKey(kid string, now time.Time) (*jose.JSONWebKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, lk := range k.keys {
		if lk.meta.ID == kid && !k.expired(lk, now) {
			pub := lk.public
			return &pub, true
		}
	}
	return nil, false
}

// generateSigningKey makes a fresh key for alg.
func generateSigningKey(alg string, now, activeAt time.Time) (*liveKey, error) {
	if !supportedAlgorithm(alg) {
		return nil, configErr("SigningAlgorithm", "must be ES256, RS256 or EdDSA")
	}
	priv, err := jwa.GenerateKey(alg)
	if err != nil {
		return nil, fmt.Errorf("authserver: generating signing key: %w", err)
	}
	jwk := jose.JSONWebKey{Key: priv, Algorithm: alg, Use: "sig"}
	thumb, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("authserver: key thumbprint: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	raw, err := json.Marshal(jwk)
	if err != nil {
		return nil, fmt.Errorf("authserver: encoding signing key: %w", err)
	}
	return parseSigningKey(&SigningKey{ID: jwk.KeyID, Algorithm: alg, PrivateJWK: raw, CreatedAt: now, ActiveAt: activeAt})
}

// parseSigningKey turns a stored key into a usable one.
func parseSigningKey(sk *SigningKey) (*liveKey, error) {
	var jwk jose.JSONWebKey
	if err := json.Unmarshal(sk.PrivateJWK, &jwk); err != nil || jwk.IsPublic() || !supportedAlgorithm(sk.Algorithm) {
		return nil, fmt.Errorf("authserver: stored signing key %q is not a usable private key", sk.ID)
	}
	jwk.KeyID, jwk.Algorithm, jwk.Use = sk.ID, sk.Algorithm, "sig"
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.SignatureAlgorithm(sk.Algorithm), Key: jwk},
		(&jose.SignerOptions{}).WithType("at+jwt"),
	)
	if err != nil {
		return nil, fmt.Errorf("authserver: signing key %q: %w", sk.ID, err)
	}
	priv, ok := jwk.Key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("authserver: stored signing key %q is not a usable private key", sk.ID)
	}
	return &liveKey{meta: *sk, signer: signer, public: jwk.Public(), private: priv}, nil
}
