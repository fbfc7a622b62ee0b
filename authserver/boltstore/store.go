// Package boltstore keeps an authorization server's state in one bbolt
// file, so that signing keys, clients, grants, codes, refresh tokens,
// consents, revocations, device codes and sealed upstream tokens survive a restart of
// the one process that serves it.
//
// Open the file, pass its [Store.Storage] as the server's
// [authserver.Config] Storage and Close it after the server:
//
//	st, err := boltstore.Open(filepath.Join(dir, "authserver.db"))
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	as, err := authserver.New(authserver.Config{
//		Issuer:  issuer,
//		Storage: st.Storage(),
//	})
//
// Replicas that share state need package pgstore instead.
package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpauth/mcpauth/authserver"
)

// buckets returns the bucket names in the bbolt file.
func buckets() []string {
	return []string{"clients", "codes", "grants", "refresh", "consents", "keys", "revoked", upstreamBucket,
		accountsBucket, ticketsBucket, deviceBucket, deviceUserBucket, refsBucket}
}

// Store implements every store interface of package authserver in one
// bbolt file. Records are JSON. It is safe for concurrent use (bbolt
// serialises writers); only one process may open the file at a time.
// Pending authorizations live ten minutes and are kept in memory: a
// restart only makes users reload the consent page.
type Store struct {
	db      *bolt.DB
	pending *authserver.MemoryStore
}

// Open opens or creates the bbolt file at path (mode 0600), waiting at
// most one second for another process's lock.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("boltstore: opening %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: initialising %s: %w", path, err)
	}
	return &Store{db: db, pending: authserver.NewMemoryStore()}, nil
}

// Close closes the file.
func (b *Store) Close() error { return b.db.Close() }

// Storage returns an [authserver.Storage] with every field set to b.
func (b *Store) Storage() authserver.Storage {
	return authserver.Storage{Clients: b, Codes: b, Grants: b, RefreshTokens: b, Consents: b, Keys: b, Revocations: b, Pending: b, UpstreamTokens: b,
		Connect: b, Devices: b}
}

// SavePending implements [authserver.PendingStore], in memory.
func (b *Store) SavePending(ctx context.Context, p *authserver.PendingAuthorization) error {
	return b.pending.SavePending(ctx, p)
}

// TakePending implements [authserver.PendingStore], in memory.
func (b *Store) TakePending(ctx context.Context, id string, now time.Time, match func(*authserver.PendingAuthorization) bool) (*authserver.PendingAuthorization, error) {
	return b.pending.TakePending(ctx, id, now, match)
}

// get reads the record under key in bucket, or [authserver.ErrNotFound].
func get[T any](b *Store, bucket, key string) (*T, error) {
	var v T
	if err := b.db.View(func(tx *bolt.Tx) error { return getIn(tx, bucket, key, &v) }); err != nil {
		return nil, err
	}
	return &v, nil
}

func getIn(tx *bolt.Tx, bucket, key string, v any) error {
	data := tx.Bucket([]byte(bucket)).Get([]byte(key))
	if data == nil {
		return authserver.ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("boltstore: corrupt %s record: %w", bucket, err)
	}
	return nil
}

func putIn(tx *bolt.Tx, bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket([]byte(bucket)).Put([]byte(key), data)
}

func (b *Store) put(bucket, key string, v any) error {
	return b.db.Update(func(tx *bolt.Tx) error { return putIn(tx, bucket, key, v) })
}

// Client implements [authserver.ClientStore].
func (b *Store) Client(_ context.Context, id string) (*authserver.Client, error) {
	return get[authserver.Client](b, "clients", id)
}

// SaveClient implements [authserver.ClientStore].
func (b *Store) SaveClient(_ context.Context, c *authserver.Client) error {
	return b.put("clients", c.ID, c)
}

// SaveCode implements [authserver.CodeStore].
func (b *Store) SaveCode(_ context.Context, c *authserver.Code) error {
	return b.put("codes", c.Key, c)
}

// Code implements [authserver.CodeStore].
func (b *Store) Code(_ context.Context, key string) (*authserver.Code, error) {
	return get[authserver.Code](b, "codes", key)
}

// RedeemCode implements [authserver.CodeStore].
func (b *Store) RedeemCode(_ context.Context, key, grantID string) (*authserver.Code, error) {
	var c authserver.Code
	err := b.db.Update(func(tx *bolt.Tx) error {
		if err := getIn(tx, "codes", key, &c); err != nil {
			return err
		}
		if c.RedeemedBy != "" {
			return authserver.ErrAlreadyUsed
		}
		c.RedeemedBy = grantID
		return putIn(tx, "codes", key, &c)
	})
	if err != nil && !errors.Is(err, authserver.ErrAlreadyUsed) {
		return nil, err
	}
	return &c, err
}

// SaveGrant implements [authserver.GrantStore].
func (b *Store) SaveGrant(_ context.Context, g *authserver.Grant) error {
	return b.put("grants", g.ID, g)
}

// Grant implements [authserver.GrantStore].
func (b *Store) Grant(_ context.Context, id string) (*authserver.Grant, error) {
	return get[authserver.Grant](b, "grants", id)
}

// RevokeGrant implements [authserver.GrantStore].
func (b *Store) RevokeGrant(_ context.Context, id string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		var g authserver.Grant
		if err := getIn(tx, "grants", id, &g); err != nil {
			return err
		}
		g.Revoked = true
		return putIn(tx, "grants", id, &g)
	})
}

// SaveRefreshToken implements [authserver.RefreshTokenStore].
func (b *Store) SaveRefreshToken(_ context.Context, t *authserver.RefreshToken) error {
	return b.put("refresh", t.Key, t)
}

// RefreshToken implements [authserver.RefreshTokenStore].
func (b *Store) RefreshToken(_ context.Context, key string) (*authserver.RefreshToken, error) {
	return get[authserver.RefreshToken](b, "refresh", key)
}

// RotateRefreshToken implements [authserver.RefreshTokenStore].
func (b *Store) RotateRefreshToken(_ context.Context, key string, next *authserver.RefreshToken) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		var t authserver.RefreshToken
		if err := getIn(tx, "refresh", key, &t); err != nil {
			return err
		}
		if t.Rotated {
			return authserver.ErrAlreadyUsed
		}
		t.Rotated = true
		if err := putIn(tx, "refresh", key, &t); err != nil {
			return err
		}
		return putIn(tx, "refresh", next.Key, next)
	})
}

// UseRefreshToken implements [authserver.RefreshTokenUser] in one write
// transaction.
func (b *Store) UseRefreshToken(_ context.Context, u authserver.RefreshUse) (*authserver.Grant, error) {
	var out *authserver.Grant
	err := b.db.Update(func(tx *bolt.Tx) error {
		var t authserver.RefreshToken
		if err := getIn(tx, "refresh", u.Key, &t); err != nil {
			return err
		}
		var g authserver.Grant
		if err := getIn(tx, "grants", t.GrantID, &g); err != nil {
			return err
		}
		if !u.Admits(&t, &g) {
			return authserver.ErrNotFound
		}
		t.Rotated = true
		if err := putIn(tx, "refresh", u.Key, &t); err != nil {
			return err
		}
		out = &g
		return putIn(tx, "refresh", u.NextKey, &authserver.RefreshToken{
			Key: u.NextKey, GrantID: t.GrantID, ClientID: t.ClientID, IssuedAt: u.Now, ExpiresAt: t.ExpiresAt,
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func consentKey(subject, clientID string) string { return subject + "\x00" + clientID }

// Consent implements [authserver.ConsentStore].
func (b *Store) Consent(_ context.Context, subject, clientID string) (*authserver.Consent, error) {
	return get[authserver.Consent](b, "consents", consentKey(subject, clientID))
}

// SaveConsent implements [authserver.ConsentStore].
func (b *Store) SaveConsent(_ context.Context, c *authserver.Consent) error {
	return b.put("consents", consentKey(c.Subject, c.ClientID), c)
}

// SigningKeys implements [authserver.KeyStore].
func (b *Store) SigningKeys(context.Context) ([]*authserver.SigningKey, error) {
	var out []*authserver.SigningKey
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("keys")).ForEach(func(_, v []byte) error {
			var k authserver.SigningKey
			if err := json.Unmarshal(v, &k); err != nil {
				return fmt.Errorf("boltstore: corrupt keys record: %w", err)
			}
			out = append(out, &k)
			return nil
		})
	})
	return out, err
}

// SaveSigningKey implements [authserver.KeyStore].
func (b *Store) SaveSigningKey(_ context.Context, k *authserver.SigningKey) error {
	return b.put("keys", k.ID, k)
}

// DeleteSigningKey implements [authserver.KeyStore].
func (b *Store) DeleteSigningKey(_ context.Context, id string) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("keys")).Delete([]byte(id)) })
}

// RevokeAccessToken implements [authserver.RevocationStore].
func (b *Store) RevokeAccessToken(_ context.Context, jti string, expires time.Time) error {
	return b.put("revoked", jti, expires)
}

// AccessTokenRevoked implements [authserver.RevocationStore].
func (b *Store) AccessTokenRevoked(_ context.Context, jti string) (bool, error) {
	_, err := get[time.Time](b, "revoked", jti)
	if errors.Is(err, authserver.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Sweep implements [authserver.Sweeper]: it deletes records that expired before
// now.
func (b *Store) Sweep(ctx context.Context, now time.Time) error {
	_ = b.pending.Sweep(ctx, now)
	if err := b.sweepDeviceCodes(now); err != nil {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		for _, bucket := range []string{"codes", "grants", "refresh", "consents", "revoked", upstreamBucket,
			accountsBucket, ticketsBucket} {
			if err := sweepBucket(tx.Bucket([]byte(bucket)), now); err != nil {
				return err
			}
		}
		return sweepRefs(tx)
	})
}

// expiringRecord reads the expiry of any record kind.
type expiringRecord struct {
	Exp       time.Time `json:"exp"`
	ExpiresAt time.Time `json:"expires_at"`
}

func sweepBucket(bk *bolt.Bucket, now time.Time) error {
	var stale [][]byte
	err := bk.ForEach(func(k, v []byte) error {
		var exp time.Time
		if err := json.Unmarshal(v, &exp); err != nil { // revoked: a bare time
			var r expiringRecord
			if json.Unmarshal(v, &r) != nil {
				return nil // leave what we cannot read
			}
			exp = r.Exp
			if exp.IsZero() {
				exp = r.ExpiresAt
			}
		}
		if !exp.IsZero() && exp.Before(now) {
			stale = append(stale, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := bk.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// upstreamBucket holds the upstream tokens.
const upstreamBucket = "upstream_tokens"

// UpstreamTokens implements [authserver.UpstreamTokenStore].
func (b *Store) UpstreamTokens(_ context.Context, id string) (*authserver.UpstreamTokens, error) {
	return get[authserver.UpstreamTokens](b, upstreamBucket, id)
}

// SaveUpstreamTokens implements [authserver.UpstreamTokenStore] in one
// bbolt write transaction.
func (b *Store) SaveUpstreamTokens(_ context.Context, t *authserver.UpstreamTokens) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		var old authserver.UpstreamTokens
		if err := getIn(tx, upstreamBucket, t.ID, &old); err != nil && !errors.Is(err, authserver.ErrNotFound) {
			return err
		}
		if old.Version != t.Version-1 {
			return authserver.ErrAlreadyUsed
		}
		return putIn(tx, upstreamBucket, t.ID, t)
	})
}

// DeleteUpstreamTokens implements [authserver.UpstreamTokenStore].
func (b *Store) DeleteUpstreamTokens(_ context.Context, id string) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(upstreamBucket)).Delete([]byte(id)) })
}
