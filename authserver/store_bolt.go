package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// boltBuckets returns the bucket names in the bbolt file.
func boltBuckets() []string {
	return []string{"clients", "codes", "grants", "refresh", "consents", "keys", "revoked", boltVaultBucket}
}

// BoltStore implements every store interface in one bbolt file, so that
// signing keys, clients, grants, codes, refresh tokens, consents and
// revocations survive a restart. Records are JSON. It is safe for
// concurrent use (bbolt serialises writers); only one process may open the
// file at a time. Pending authorizations live ten minutes and are kept in
// memory: a restart only makes users reload the consent page.
type BoltStore struct {
	db      *bolt.DB
	pending *MemoryStore
}

// OpenBoltStore opens or creates the bbolt file at path (mode 0600),
// waiting at most one second for another process's lock.
func OpenBoltStore(path string) (*BoltStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("authserver: opening %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range boltBuckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("authserver: initialising %s: %w", path, err)
	}
	return &BoltStore{db: db, pending: NewMemoryStore()}, nil
}

// Close closes the file.
func (b *BoltStore) Close() error { return b.db.Close() }

// Storage returns a [Storage] with every field set to b.
func (b *BoltStore) Storage() Storage {
	return Storage{Clients: b, Codes: b, Grants: b, RefreshTokens: b, Consents: b, Keys: b, Revocations: b, Pending: b, UpstreamTokens: b}
}

// SavePending implements [PendingStore], in memory.
func (b *BoltStore) SavePending(ctx context.Context, p *PendingAuthorization) error {
	return b.pending.SavePending(ctx, p)
}

// TakePending implements [PendingStore], in memory.
func (b *BoltStore) TakePending(ctx context.Context, id string, now time.Time, match func(*PendingAuthorization) bool) (*PendingAuthorization, error) {
	return b.pending.TakePending(ctx, id, now, match)
}

// boltGet reads the record under key in bucket, or [ErrNotFound].
func boltGet[T any](b *BoltStore, bucket, key string) (*T, error) {
	var v T
	if err := b.db.View(func(tx *bolt.Tx) error { return getIn(tx, bucket, key, &v) }); err != nil {
		return nil, err
	}
	return &v, nil
}

func getIn(tx *bolt.Tx, bucket, key string, v any) error {
	data := tx.Bucket([]byte(bucket)).Get([]byte(key))
	if data == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("authserver: corrupt %s record: %w", bucket, err)
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

func (b *BoltStore) put(bucket, key string, v any) error {
	return b.db.Update(func(tx *bolt.Tx) error { return putIn(tx, bucket, key, v) })
}

// Client implements [ClientStore].
func (b *BoltStore) Client(_ context.Context, id string) (*Client, error) {
	return boltGet[Client](b, "clients", id)
}

// SaveClient implements [ClientStore].
func (b *BoltStore) SaveClient(_ context.Context, c *Client) error { return b.put("clients", c.ID, c) }

// SaveCode implements [CodeStore].
func (b *BoltStore) SaveCode(_ context.Context, c *Code) error { return b.put("codes", c.Key, c) }

// Code implements [CodeStore].
func (b *BoltStore) Code(_ context.Context, key string) (*Code, error) {
	return boltGet[Code](b, "codes", key)
}

// RedeemCode implements [CodeStore].
func (b *BoltStore) RedeemCode(_ context.Context, key, grantID string) (*Code, error) {
	var c Code
	err := b.db.Update(func(tx *bolt.Tx) error {
		if err := getIn(tx, "codes", key, &c); err != nil {
			return err
		}
		if c.RedeemedBy != "" {
			return ErrAlreadyUsed
		}
		c.RedeemedBy = grantID
		return putIn(tx, "codes", key, &c)
	})
	if err != nil && !errors.Is(err, ErrAlreadyUsed) {
		return nil, err
	}
	return &c, err
}

// SaveGrant implements [GrantStore].
func (b *BoltStore) SaveGrant(_ context.Context, g *Grant) error { return b.put("grants", g.ID, g) }

// Grant implements [GrantStore].
func (b *BoltStore) Grant(_ context.Context, id string) (*Grant, error) {
	return boltGet[Grant](b, "grants", id)
}

// RevokeGrant implements [GrantStore].
func (b *BoltStore) RevokeGrant(_ context.Context, id string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		var g Grant
		if err := getIn(tx, "grants", id, &g); err != nil {
			return err
		}
		g.Revoked = true
		return putIn(tx, "grants", id, &g)
	})
}

// SaveRefreshToken implements [RefreshTokenStore].
func (b *BoltStore) SaveRefreshToken(_ context.Context, t *RefreshToken) error {
	return b.put("refresh", t.Key, t)
}

// RefreshToken implements [RefreshTokenStore].
func (b *BoltStore) RefreshToken(_ context.Context, key string) (*RefreshToken, error) {
	return boltGet[RefreshToken](b, "refresh", key)
}

// RotateRefreshToken implements [RefreshTokenStore].
func (b *BoltStore) RotateRefreshToken(_ context.Context, key string, next *RefreshToken) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		var t RefreshToken
		if err := getIn(tx, "refresh", key, &t); err != nil {
			return err
		}
		if t.Rotated {
			return ErrAlreadyUsed
		}
		t.Rotated = true
		if err := putIn(tx, "refresh", key, &t); err != nil {
			return err
		}
		return putIn(tx, "refresh", next.Key, next)
	})
}

// UseRefreshToken implements [RefreshTokenUser] in one write
// transaction.
func (b *BoltStore) UseRefreshToken(_ context.Context, u RefreshUse) (*Grant, error) {
	var out *Grant
	err := b.db.Update(func(tx *bolt.Tx) error {
		var t RefreshToken
		if err := getIn(tx, "refresh", u.Key, &t); err != nil {
			return err
		}
		var g Grant
		if err := getIn(tx, "grants", t.GrantID, &g); err != nil {
			return err
		}
		if !u.admits(&t, &g) {
			return ErrNotFound
		}
		t.Rotated = true
		if err := putIn(tx, "refresh", u.Key, &t); err != nil {
			return err
		}
		out = &g
		return putIn(tx, "refresh", u.NextKey, u.successor(&t))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func consentKey(subject, clientID string) string { return subject + "\x00" + clientID }

// Consent implements [ConsentStore].
func (b *BoltStore) Consent(_ context.Context, subject, clientID string) (*Consent, error) {
	return boltGet[Consent](b, "consents", consentKey(subject, clientID))
}

// SaveConsent implements [ConsentStore].
func (b *BoltStore) SaveConsent(_ context.Context, c *Consent) error {
	return b.put("consents", consentKey(c.Subject, c.ClientID), c)
}

// SigningKeys implements [KeyStore].
func (b *BoltStore) SigningKeys(context.Context) ([]*SigningKey, error) {
	var out []*SigningKey
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("keys")).ForEach(func(_, v []byte) error {
			var k SigningKey
			if err := json.Unmarshal(v, &k); err != nil {
				return fmt.Errorf("authserver: corrupt keys record: %w", err)
			}
			out = append(out, &k)
			return nil
		})
	})
	return out, err
}

// SaveSigningKey implements [KeyStore].
func (b *BoltStore) SaveSigningKey(_ context.Context, k *SigningKey) error {
	return b.put("keys", k.ID, k)
}

// DeleteSigningKey implements [KeyStore].
func (b *BoltStore) DeleteSigningKey(_ context.Context, id string) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("keys")).Delete([]byte(id)) })
}

// RevokeAccessToken implements [RevocationStore].
func (b *BoltStore) RevokeAccessToken(_ context.Context, jti string, expires time.Time) error {
	return b.put("revoked", jti, expires)
}

// AccessTokenRevoked implements [RevocationStore].
func (b *BoltStore) AccessTokenRevoked(_ context.Context, jti string) (bool, error) {
	_, err := boltGet[time.Time](b, "revoked", jti)
	return err == nil, ignoreNotFound(err)
}

// Sweep implements [Sweeper]: it deletes records that expired before now.
func (b *BoltStore) Sweep(ctx context.Context, now time.Time) error {
	_ = b.pending.Sweep(ctx, now)
	return b.db.Update(func(tx *bolt.Tx) error {
		for _, bucket := range []string{"codes", "grants", "refresh", "consents", "revoked", boltVaultBucket} {
			if err := sweepBucket(tx.Bucket([]byte(bucket)), now); err != nil {
				return err
			}
		}
		return nil
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
