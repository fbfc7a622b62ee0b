package pgstore

import (
	"context"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// UpstreamTokens implements [authserver.UpstreamTokenStore].
func (p *Store) UpstreamTokens(ctx context.Context, id string) (*authserver.UpstreamTokens, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	t := authserver.UpstreamTokens{ID: id}
	var grant, owner *string
	var until *time.Time
	err := p.pool.QueryRow(ctx, `SELECT grant_id, sealed, version, expires_at, lease_owner, lease_until
		FROM upstream_tokens WHERE id = $1`, id).
		Scan(&grant, &t.Sealed, &t.Version, &t.ExpiresAt, &owner, &until)
	if err != nil {
		return nil, pgErr(err)
	}
	if grant != nil {
		t.GrantID = *grant
	}
	if owner != nil && until != nil {
		t.LeaseOwner, t.LeaseUntil = *owner, *until
	}
	return &t, nil
}

// SaveUpstreamTokens implements [authserver.UpstreamTokenStore] with one
// conditional statement: an insert when t.Version is 1, else an UPDATE
// matching the previous version, so of concurrent writers on any replicas
// one wins.
func (p *Store) SaveUpstreamTokens(ctx context.Context, t *authserver.UpstreamTokens) error {
	var grant, owner *string
	var until *time.Time
	if t.GrantID != "" {
		grant = &t.GrantID
	}
	if t.LeaseOwner != "" {
		owner, until = &t.LeaseOwner, &t.LeaseUntil
	}
	var sql string
	if t.Version == 1 {
		sql = `INSERT INTO upstream_tokens (id, grant_id, sealed, version, expires_at, lease_owner, lease_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`
	} else {
		sql = `UPDATE upstream_tokens SET grant_id = $2, sealed = $3, version = $4, expires_at = $5,
			lease_owner = $6, lease_until = $7 WHERE id = $1 AND version = $4 - 1`
	}
	tag, err := p.exec(ctx, sql, t.ID, grant, t.Sealed, t.Version, t.ExpiresAt, owner, until)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return authserver.ErrAlreadyUsed
	}
	return nil
}

// DeleteUpstreamTokens implements [authserver.UpstreamTokenStore].
func (p *Store) DeleteUpstreamTokens(ctx context.Context, id string) error {
	_, err := p.exec(ctx, "DELETE FROM upstream_tokens WHERE id = $1", id)
	return err
}
