package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpauth/mcpauth/authserver"
)

// errDevicesFull answers a device login started while the table is full.
var errDevicesFull = unavailable("too many device logins in progress")

// SaveDeviceCode implements [authserver.DeviceCodeStore]. Past
// [authserver.MaxDeviceCodes] rows it drops the expired ones and, if
// still full, refuses with temporarily_unavailable; the count stops at
// the bound.
func (p *Store) SaveDeviceCode(ctx context.Context, d *authserver.DeviceCode) error {
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	insert := func() (bool, error) {
		tag, err := p.exec(ctx, `INSERT INTO device_codes (key, user_code_key, data, expires_at)
			SELECT $1, $2, $3, $4
			WHERE (SELECT count(*) FROM (SELECT 1 FROM device_codes LIMIT $5) AS bounded) < $5`,
			d.Key, d.UserCodeKey, data, d.ExpiresAt, authserver.MaxDeviceCodes)
		if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "23505" { // unique_violation
			return false, authserver.ErrAlreadyUsed
		}
		return err == nil && tag.RowsAffected() > 0, err
	}
	ok, err := insert()
	if err != nil || ok {
		return err
	}
	if _, err := p.exec(ctx, "DELETE FROM device_codes WHERE expires_at <= $1", d.IssuedAt); err != nil {
		return err
	}
	if ok, err = insert(); err != nil || ok {
		return err
	}
	return errDevicesFull
}

// DeviceCode implements [authserver.DeviceCodeStore].
func (p *Store) DeviceCode(ctx context.Context, key string) (*authserver.DeviceCode, error) {
	return pgGet[authserver.DeviceCode](ctx, p, "SELECT data FROM device_codes WHERE key = $1", []any{key})
}

// DeviceCodeByUserCode implements [authserver.DeviceCodeStore].
func (p *Store) DeviceCodeByUserCode(ctx context.Context, userCodeKey string) (*authserver.DeviceCode, error) {
	return pgGet[authserver.DeviceCode](ctx, p, "SELECT data FROM device_codes WHERE user_code_key = $1", []any{userCodeKey})
}

// UpdateDeviceCode implements [authserver.DeviceCodeStore]: the row is
// locked while change runs and written back only if change accepts.
func (p *Store) UpdateDeviceCode(ctx context.Context, key string, change func(*authserver.DeviceCode) error) (*authserver.DeviceCode, error) {
	var out *authserver.DeviceCode
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		qctx, cancel := p.ctx(ctx)
		defer cancel()
		var data []byte
		if err := tx.QueryRow(qctx, "SELECT data FROM device_codes WHERE key = $1 FOR UPDATE", key).Scan(&data); err != nil {
			return pgErr(err)
		}
		var d authserver.DeviceCode
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("pgstore: corrupt device code: %w", err)
		}
		k, u := d.Key, d.UserCodeKey
		if err := change(&d); err != nil {
			return err
		}
		d.Key, d.UserCodeKey = k, u
		data, err := json.Marshal(&d)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(qctx, "UPDATE device_codes SET data = $2 WHERE key = $1", key, data); err != nil {
			return pgErr(err)
		}
		out = &d
		return nil
	})
	if err != nil {
		return nil, pgErr(err)
	}
	return out, nil
}

// sweepDeviceCodes deletes the codes expired more than
// [authserver.DeviceCodeGrace] before now.
func (p *Store) sweepDeviceCodes(ctx context.Context, now time.Time) error {
	_, err := p.exec(ctx, "DELETE FROM device_codes WHERE expires_at < $1", now.Add(-authserver.DeviceCodeGrace))
	return err
}
