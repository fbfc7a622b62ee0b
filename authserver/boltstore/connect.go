package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// The buckets of connected accounts, keyed by subject and provider, and
// of connect tickets, keyed by ID.
const (
	accountsBucket = "connected_accounts"
	ticketsBucket  = "connect_tickets"
)

func accountKey(subject, provider string) string { return subject + "\x00" + provider }

// ConnectedAccount implements [authserver.ConnectStore].
func (b *Store) ConnectedAccount(_ context.Context, subject, provider string) (*authserver.ConnectedAccount, error) {
	return get[authserver.ConnectedAccount](b, accountsBucket, accountKey(subject, provider))
}

// SaveConnectedAccount implements [authserver.ConnectStore].
func (b *Store) SaveConnectedAccount(_ context.Context, a *authserver.ConnectedAccount) error {
	return b.put(accountsBucket, accountKey(a.Subject, a.Provider), a)
}

// DeleteConnectedAccount implements [authserver.ConnectStore] in one
// transaction.
func (b *Store) DeleteConnectedAccount(_ context.Context, a *authserver.ConnectedAccount) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		k := accountKey(a.Subject, a.Provider)
		var old authserver.ConnectedAccount
		if err := getIn(tx, accountsBucket, k, &old); errors.Is(err, authserver.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if old.Tokens != a.Tokens {
			return nil
		}
		return tx.Bucket([]byte(accountsBucket)).Delete([]byte(k))
	})
}

// ConnectedAccountsOfGrant implements [authserver.ConnectStore] by a scan
// of the accounts.
func (b *Store) ConnectedAccountsOfGrant(_ context.Context, grantID string) ([]*authserver.ConnectedAccount, error) {
	var out []*authserver.ConnectedAccount
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(accountsBucket)).ForEach(func(_, v []byte) error {
			var a authserver.ConnectedAccount
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("boltstore: corrupt %s record: %w", accountsBucket, err)
			}
			if a.GrantID == grantID {
				out = append(out, &a)
			}
			return nil
		})
	})
	return out, err
}

// SaveConnectTicket implements [authserver.ConnectStore]: past
// [authserver.MaxConnectTickets] tickets it refuses with
// temporarily_unavailable until the sweep drops expired ones; a reference
// past [authserver.MaxConnectRefsPerSubject] of its subject displaces the
// oldest.
func (b *Store) SaveConnectTicket(_ context.Context, t *authserver.ConnectTicket) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(ticketsBucket)).Stats().KeyN >= authserver.MaxConnectTickets {
			return &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable,
				Description: "too many connect flows in progress; try again later"}
		}
		if isRef(t) {
			if err := makeRoomForRef(tx, t.Subject); err != nil {
				return err
			}
			if err := tx.Bucket([]byte(refsBucket)).Put(refKey(t), nil); err != nil {
				return err
			}
		}
		return putIn(tx, ticketsBucket, t.ID, t)
	})
}

// ConnectTicket implements [authserver.ConnectStore].
func (b *Store) ConnectTicket(_ context.Context, id string, now time.Time) (*authserver.ConnectTicket, error) {
	t, err := get[authserver.ConnectTicket](b, ticketsBucket, id)
	if err == nil && !now.Before(t.ExpiresAt) {
		return nil, authserver.ErrNotFound
	}
	return t, err
}

// TakeConnectTicket implements [authserver.ConnectStore] in one
// transaction.
func (b *Store) TakeConnectTicket(_ context.Context, id string, now time.Time, match func(*authserver.ConnectTicket) bool) (*authserver.ConnectTicket, error) {
	var out *authserver.ConnectTicket
	err := b.db.Update(func(tx *bolt.Tx) error {
		var t, shown authserver.ConnectTicket
		if err := getIn(tx, ticketsBucket, id, &t); err != nil {
			return err
		}
		shown = t
		if !now.Before(t.ExpiresAt) || !match(&shown) {
			return authserver.ErrNotFound
		}
		out = &t
		if isRef(&t) {
			if err := tx.Bucket([]byte(refsBucket)).Delete(refKey(&t)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte(ticketsBucket)).Delete([]byte(id))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
