package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpauth/mcpauth/authserver"
)

// errConnectFull answers a new connect ticket past MaxConnectTickets.
var errConnectFull = unavailable("too many connect flows in progress; try again later")

// ConnectedAccount implements [authserver.ConnectStore].
func (p *Store) ConnectedAccount(ctx context.Context, subject, provider string) (*authserver.ConnectedAccount, error) {
	return pgGet[authserver.ConnectedAccount](ctx, p,
		"SELECT data FROM connected_accounts WHERE subject = $1 AND provider = $2", []any{subject, provider})
}

// SaveConnectedAccount implements [authserver.ConnectStore].
func (p *Store) SaveConnectedAccount(ctx context.Context, a *authserver.ConnectedAccount) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, `INSERT INTO connected_accounts (subject, provider, data, grant_id, tokens, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (subject, provider) DO UPDATE SET data = EXCLUDED.data, grant_id = EXCLUDED.grant_id,
			tokens = EXCLUDED.tokens, expires_at = EXCLUDED.expires_at`,
		a.Subject, a.Provider, data, a.GrantID, a.Tokens, a.ExpiresAt)
	return err
}

// DeleteConnectedAccount implements [authserver.ConnectStore].
func (p *Store) DeleteConnectedAccount(ctx context.Context, a *authserver.ConnectedAccount) error {
	_, err := p.exec(ctx, "DELETE FROM connected_accounts WHERE subject = $1 AND provider = $2 AND tokens = $3",
		a.Subject, a.Provider, a.Tokens)
	return err
}

// ConnectedAccountsOfGrant implements [authserver.ConnectStore].
func (p *Store) ConnectedAccountsOfGrant(ctx context.Context, grantID string) ([]*authserver.ConnectedAccount, error) {
	qctx, cancel := p.ctx(ctx)
	defer cancel()
	rows, err := p.pool.Query(qctx, "SELECT data FROM connected_accounts WHERE grant_id = $1", grantID)
	if err != nil {
		return nil, pgErr(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*authserver.ConnectedAccount, error) {
		var data []byte
		if err := row.Scan(&data); err != nil {
			return nil, err
		}
		var a authserver.ConnectedAccount
		if err := json.Unmarshal(data, &a); err != nil {
			return nil, fmt.Errorf("pgstore: corrupt connected account: %w", err)
		}
		return &a, nil
	})
	return out, pgErr(err)
}

// SaveConnectTicket implements [authserver.ConnectStore]: past
// [authserver.MaxConnectTickets] live tickets it refuses with
// temporarily_unavailable; the count stops at the bound. A reference past
// [authserver.MaxConnectRefsPerSubject] of its subject displaces the
// oldest, in the same transaction, found through the index on
// (ref_subject, expires_at).
func (p *Store) SaveConnectTicket(ctx context.Context, t *authserver.ConnectTicket) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	var subject *string
	if t.Kind == authserver.TicketRef && t.Subject != "" {
		subject = &t.Subject
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		qctx, cancel := p.ctx(ctx)
		defer cancel()
		tag, err := tx.Exec(qctx, `INSERT INTO connect_tickets (id, data, expires_at, ref_subject)
			SELECT $1, $2, $3, $5
			WHERE (SELECT count(*) FROM (SELECT 1 FROM connect_tickets LIMIT $4) AS bounded) < $4
			ON CONFLICT (id) DO NOTHING`, t.ID, data, t.ExpiresAt, authserver.MaxConnectTickets, subject)
		switch {
		case err != nil:
			return err
		case tag.RowsAffected() == 0:
			return errConnectFull // or a random ID taken, which does not happen
		case subject == nil:
			return nil
		}
		_, err = tx.Exec(qctx, `DELETE FROM connect_tickets WHERE id IN (
			SELECT id FROM connect_tickets WHERE ref_subject = $1
			ORDER BY expires_at DESC, id DESC OFFSET $2)`, *subject, authserver.MaxConnectRefsPerSubject)
		return err
	})
	if errors.Is(err, errConnectFull) {
		return err
	}
	return pgErr(err)
}

// ConnectTicket implements [authserver.ConnectStore].
func (p *Store) ConnectTicket(ctx context.Context, id string, now time.Time) (*authserver.ConnectTicket, error) {
	return pgGet[authserver.ConnectTicket](ctx, p,
		"SELECT data FROM connect_tickets WHERE id = $1 AND expires_at > $2", []any{id, now})
}

// TakeConnectTicket implements [authserver.ConnectStore]: the row is
// locked while match runs and deleted only if it matched.
func (p *Store) TakeConnectTicket(ctx context.Context, id string, now time.Time, match func(*authserver.ConnectTicket) bool) (*authserver.ConnectTicket, error) {
	var out *authserver.ConnectTicket
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		qctx, cancel := p.ctx(ctx)
		defer cancel()
		var data []byte
		err := tx.QueryRow(qctx, "SELECT data FROM connect_tickets WHERE id = $1 AND expires_at > $2 FOR UPDATE",
			id, now).Scan(&data)
		if err != nil {
			return pgErr(err)
		}
		var t, shown authserver.ConnectTicket
		if err := errors.Join(json.Unmarshal(data, &t), json.Unmarshal(data, &shown)); err != nil {
			return fmt.Errorf("pgstore: corrupt connect ticket: %w", err)
		}
		if !match(&shown) {
			return authserver.ErrNotFound
		}
		if _, err := tx.Exec(qctx, "DELETE FROM connect_tickets WHERE id = $1", id); err != nil {
			return pgErr(err)
		}
		out = &t
		return nil
	})
	if err != nil {
		return nil, pgErr(err)
	}
	return out, nil
}
