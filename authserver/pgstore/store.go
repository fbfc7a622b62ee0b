// Package pgstore keeps an authorization server's state in PostgreSQL, so
// that several replicas of the server share it: a login may visit a
// different replica at each step, a code is redeemed at most once and a
// refresh token rotated at most once across all of them.
//
// Open connects, applies the embedded schema migrations the database
// lacks and returns a [Store]; pass its [Store.Storage] as the server's
// [authserver.Config] Storage and Close it after the server:
//
//	st, err := pgstore.Open(ctx, url, pgstore.Config{KeyEncryptionKey: kek})
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	as, err := authserver.New(authserver.Config{
//		Issuer:  issuer,
//		Storage: st.Storage(),
//	})
//
// Signing keys are stored sealed under the key-encryption key, which every
// replica is given and the database never holds. When the database cannot
// be reached, every call fails with the protocol error
// temporarily_unavailable (HTTP 503).
package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/seal"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Config configures [Open].
type Config struct {
	// KeyEncryptionKey seals the signing keys' private parts (AES-256-GCM):
	// 32 random bytes, the same for every replica. Required.
	KeyEncryptionKey []byte
	// OldKeyEncryptionKeys still open keys sealed before KeyEncryptionKey
	// replaced them; new keys are sealed under KeyEncryptionKey.
	OldKeyEncryptionKeys [][]byte
	// MaxClients bounds the registered clients: past it, registration
	// answers temporarily_unavailable. Zero means [DefaultMaxClients].
	MaxClients int
	// MaxPending bounds the authorization requests waiting on the consent
	// page. Zero means [authserver.MaxPendingAuthorizations].
	MaxPending int
	// MaxConns bounds the connections to the database from this store.
	// Zero means pool_max_conns from the URL, else [DefaultMaxConns].
	MaxConns int
	// QueryTimeout bounds each store call that the caller's context does
	// not bound sooner, so a stalled database answers
	// temporarily_unavailable instead of holding requests. Zero means
	// [DefaultQueryTimeout].
	QueryTimeout time.Duration
}

// errPendingFull answers a login started while the pending store is full.
var errPendingFull = unavailable("too many pending authorization requests")

// Defaults of [Config].
const (
	DefaultMaxClients   = 100000
	DefaultQueryTimeout = 5 * time.Second
	DefaultMaxConns     = 16
)

// Store implements every store interface of package authserver on
// PostgreSQL. It is safe for concurrent use.
//
// When the database cannot be reached, every call fails with an error that
// is the protocol error temporarily_unavailable (HTTP 503) and wraps the
// cause.
type Store struct {
	pool       *pgxpool.Pool
	seal       *seal.Ring
	maxClients int
	maxPending int
	timeout    time.Duration
	// refreshes batches concurrent [Store.UseRefreshToken] calls;
	// refreshSizes counts the statements they send by their uses.
	refreshes    *batcher[authserver.RefreshUse, *authserver.Grant]
	refreshSizes batchSizes
}

// Open connects to the database at url (a postgres:// URL or key=value
// connection string, as pgx accepts), applies the schema migrations the
// database lacks and returns the store. Close releases the connections.
// Its sessions run with enable_seqscan=off unless url sets it, so that
// plans cached on nearly empty tables use their indexes. An invalid cfg or
// url is an error wrapping [authserver.ErrConfig].
func Open(ctx context.Context, url string, cfg Config) (*Store, error) {
	ring, err := seal.NewRing(cfg.KeyEncryptionKey, cfg.OldKeyEncryptionKeys...)
	if err != nil {
		return nil, configErr("Config.KeyEncryptionKey", err.Error())
	}
	if cfg.MaxClients < 0 || cfg.MaxPending < 0 || cfg.MaxConns < 0 || cfg.QueryTimeout < 0 {
		return nil, configErr("Config", "limits must not be negative")
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may echo the URL, password included.
		return nil, configErr("database URL", "not a valid PostgreSQL connection string")
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = int32(min(cfg.MaxConns, math.MaxInt32))
	case !strings.Contains(url, "pool_max_conns"):
		pc.MaxConns = DefaultMaxConns
	}
	pc.ConnConfig.ConnectTimeout = cmp.Or(pc.ConnConfig.ConnectTimeout, 5*time.Second)
	// Every statement of the store finds its rows through an index. The
	// plan PostgreSQL caches for a prepared statement is made once per
	// connection; made while a table is nearly empty (a new database),
	// it may read the table whole, and goes on doing so as the table
	// grows until the table is next analyzed. Without sequential scans
	// the cached plans use the indexes, whatever the tables' sizes were.
	if _, set := pc.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		pc.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	p := &Store{
		pool:       pool,
		seal:       ring,
		maxClients: cmp.Or(cfg.MaxClients, DefaultMaxClients),
		maxPending: cmp.Or(cfg.MaxPending, authserver.MaxPendingAuthorizations),
		timeout:    cmp.Or(cfg.QueryTimeout, DefaultQueryTimeout),
	}
	p.refreshes = newBatcher(refreshBatchMax, refreshQueueMax, p.useRefreshTokens)
	p.refreshSizes = newBatchSizes(refreshBatchMax)
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: schema: %w", err)
	}
	return p, nil
}

// Close releases the connections.
func (p *Store) Close() error {
	p.pool.Close()
	return nil
}

// Storage returns an [authserver.Storage] with every field set to p.
func (p *Store) Storage() authserver.Storage {
	return authserver.Storage{Clients: p, Codes: p, Grants: p, RefreshTokens: p, Consents: p, Keys: p, Revocations: p, Pending: p, UpstreamTokens: p,
		Connect: p, Devices: p}
}

// ctx bounds a call by the query timeout.
func (p *Store) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout)
}

// unavailableError is a store failure the client may retry: the database
// is down, restarting, unreachable, overloaded or too slow. It is the
// protocol error temporarily_unavailable and wraps the cause for logs.
type unavailableError struct {
	oe    *oauthmeta.Error
	cause error
}

func (e *unavailableError) Error() string {
	return "pgstore: storage unavailable: " + e.cause.Error()
}

func (e *unavailableError) Unwrap() []error { return []error{e.oe, e.cause} }

// pgErr translates a pgx error: no rows is [authserver.ErrNotFound]; a failure to
// reach or use the database is temporarily_unavailable; anything else (a query
// the server refused) stays an internal error.
func pgErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return authserver.ErrNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, authserver.ErrNotFound), errors.Is(err, authserver.ErrAlreadyUsed):
		return err
	}
	if _, done := errors.AsType[*unavailableError](err); done {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !retryableSQLState(pe.Code) {
		return fmt.Errorf("pgstore: %w", err)
	}
	return &unavailableError{oe: unavailable("storage is temporarily unavailable"), cause: err}
}

// unavailable is the protocol error temporarily_unavailable with desc,
// which must never contain a token, code or secret.
func unavailable(desc string) *oauthmeta.Error {
	return &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable, Description: desc}
}

// configErr is an invalid configuration of field.
func configErr(field, msg string) error {
	return fmt.Errorf("%w: pgstore.%s: %s", authserver.ErrConfig, field, msg)
}

// retryableSQLState reports whether the server's error means "try again
// later": connection exceptions (class 08), insufficient resources (53),
// operator intervention such as a shutdown (57), serialization failures
// and deadlocks (40001, 40P01).
func retryableSQLState(code string) bool {
	if len(code) < 2 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57":
		return true
	}
	return code == "40001" || code == "40P01"
}

// pgGet reads the row sql selects: the record as JSON in its first
// column, and the columns kept outside the JSON into more.
func pgGet[T any](ctx context.Context, p *Store, sql string, args []any, more ...any) (*T, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	var data []byte
	if err := p.pool.QueryRow(ctx, sql, args...).Scan(append([]any{&data}, more...)...); err != nil {
		return nil, pgErr(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt %T record: %w", v, err)
	}
	return &v, nil
}

func (p *Store) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	tag, err := p.pool.Exec(ctx, sql, args...)
	return tag, pgErr(err)
}

// Client implements [authserver.ClientStore].
func (p *Store) Client(ctx context.Context, id string) (*authserver.Client, error) {
	return pgGet[authserver.Client](ctx, p, "SELECT data FROM clients WHERE id = $1", []any{id})
}

// SaveClient implements [authserver.ClientStore]. A new client past MaxClients
// is refused with temporarily_unavailable; the count stops at the bound, so its
// cost does not grow with the table.
func (p *Store) SaveClient(ctx context.Context, c *authserver.Client) error {
	data, err := json.Marshal(c) // without Secret, which never marshals
	if err != nil {
		return err
	}
	tag, err := p.exec(ctx, `INSERT INTO clients (id, data)
		SELECT $1, $2
		WHERE EXISTS (SELECT 1 FROM clients WHERE id = $1)
		   OR (SELECT count(*) FROM (SELECT 1 FROM clients LIMIT $3) AS bounded) < $3
		ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data`, c.ID, data, p.maxClients)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return unavailable("client registry is full")
	}
	return nil
}

// SaveCode implements [authserver.CodeStore].
func (p *Store) SaveCode(ctx context.Context, c *authserver.Code) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, `INSERT INTO codes (key, data, redeemed_by, expires_at) VALUES ($1, $2, NULLIF($3, ''), $4)
		ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, redeemed_by = coalesce(codes.redeemed_by, EXCLUDED.redeemed_by),
			expires_at = EXCLUDED.expires_at`,
		c.Key, data, c.RedeemedBy, c.ExpiresAt)
	return err
}

// Code implements [authserver.CodeStore].
func (p *Store) Code(ctx context.Context, key string) (*authserver.Code, error) {
	return p.scanCode(ctx, "SELECT data, coalesce(redeemed_by, '') FROM codes WHERE key = $1", key)
}

// scanCode reads the code sql returns, with its redeemed_by column.
func (p *Store) scanCode(ctx context.Context, sql string, args ...any) (*authserver.Code, error) {
	var redeemedBy string
	c, err := pgGet[authserver.Code](ctx, p, sql, args, &redeemedBy)
	if err != nil {
		return nil, err
	}
	c.RedeemedBy = redeemedBy
	return c, nil
}

// RedeemCode implements [authserver.CodeStore] with one conditional UPDATE: of
// any number of concurrent redemptions, on any replicas, exactly one matches
// the row while redeemed_by is still NULL.
func (p *Store) RedeemCode(ctx context.Context, key, grantID string) (*authserver.Code, error) {
	c, err := p.scanCode(ctx, `UPDATE codes SET redeemed_by = $2
		WHERE key = $1 AND redeemed_by IS NULL RETURNING data, redeemed_by`, key, grantID)
	if !errors.Is(err, authserver.ErrNotFound) {
		return c, err
	}
	// Either there is no such code, or it was redeemed before.
	c, err = p.Code(ctx, key)
	if err != nil {
		return nil, err
	}
	return c, authserver.ErrAlreadyUsed
}

// SaveGrant implements [authserver.GrantStore].
func (p *Store) SaveGrant(ctx context.Context, g *authserver.Grant) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, `INSERT INTO grants (id, data, revoked, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, revoked = grants.revoked OR EXCLUDED.revoked,
			expires_at = EXCLUDED.expires_at`,
		g.ID, data, g.Revoked, g.ExpiresAt)
	return err
}

// Grant implements [authserver.GrantStore].
func (p *Store) Grant(ctx context.Context, id string) (*authserver.Grant, error) {
	var revoked bool
	g, err := pgGet[authserver.Grant](ctx, p, "SELECT data, revoked FROM grants WHERE id = $1", []any{id}, &revoked)
	if err != nil {
		return nil, err
	}
	g.Revoked = revoked
	return g, nil
}

// RevokeGrant implements [authserver.GrantStore]. Revocation is a column of its
// own, so no later save of the grant can undo it.
func (p *Store) RevokeGrant(ctx context.Context, id string) error {
	tag, err := p.exec(ctx, "UPDATE grants SET revoked = true WHERE id = $1", id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return authserver.ErrNotFound
	}
	return nil
}

// SaveRefreshToken implements [authserver.RefreshTokenStore].
func (p *Store) SaveRefreshToken(ctx context.Context, t *authserver.RefreshToken) error {
	return p.insertRefreshToken(ctx, p.pool, t)
}

func (p *Store) insertRefreshToken(ctx context.Context, db *pgxpool.Pool, t *authserver.RefreshToken) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	_, err = db.Exec(ctx, `INSERT INTO refresh_tokens (key, grant_id, data, rotated, expires_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, rotated = refresh_tokens.rotated OR EXCLUDED.rotated,
			expires_at = EXCLUDED.expires_at`,
		t.Key, t.GrantID, data, t.Rotated, t.ExpiresAt)
	return pgErr(err)
}

// RefreshToken implements [authserver.RefreshTokenStore].
func (p *Store) RefreshToken(ctx context.Context, key string) (*authserver.RefreshToken, error) {
	var rotated bool
	t, err := pgGet[authserver.RefreshToken](ctx, p, "SELECT data, rotated FROM refresh_tokens WHERE key = $1", []any{key}, &rotated)
	if err != nil {
		return nil, err
	}
	t.Rotated = rotated
	return t, nil
}

// RotateRefreshToken implements [authserver.RefreshTokenStore] in one statement
// (one round trip, one transaction): a conditional UPDATE marks key rotated and
// only if it matched is the successor inserted. Of concurrent rotations on any
// replicas exactly one matches: the others wait for its row lock and then find
// the row rotated.
func (p *Store) RotateRefreshToken(ctx context.Context, key string, next *authserver.RefreshToken) error {
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	var rotated, exists bool
	err = p.pool.QueryRow(ctx, `WITH old AS (
			UPDATE refresh_tokens SET rotated = true WHERE key = $1 AND NOT rotated RETURNING key
		), successor AS (
			INSERT INTO refresh_tokens (key, grant_id, data, rotated, expires_at)
			SELECT $2, $3, $4, false, $5 FROM old
			RETURNING key
		)
		SELECT EXISTS (SELECT 1 FROM successor), EXISTS (SELECT 1 FROM refresh_tokens WHERE key = $1)`,
		key, next.Key, next.GrantID, data, next.ExpiresAt).Scan(&rotated, &exists)
	switch {
	case err != nil:
		return pgErr(err)
	case rotated:
		return nil
	case exists:
		return authserver.ErrAlreadyUsed
	default:
		return authserver.ErrNotFound
	}
}

// Consent implements [authserver.ConsentStore].
func (p *Store) Consent(ctx context.Context, subject, clientID string) (*authserver.Consent, error) {
	return pgGet[authserver.Consent](ctx, p, "SELECT data FROM consents WHERE subject = $1 AND client_id = $2", []any{subject, clientID})
}

// SaveConsent implements [authserver.ConsentStore].
func (p *Store) SaveConsent(ctx context.Context, c *authserver.Consent) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, `INSERT INTO consents (subject, client_id, data, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (subject, client_id) DO UPDATE SET data = EXCLUDED.data, expires_at = EXCLUDED.expires_at`,
		c.Subject, c.ClientID, data, c.ExpiresAt)
	return err
}

// signingKeyContext binds a sealed key to its ID.
func signingKeyContext(kid string) string { return "mcpauth signing key\x00" + kid }

// SigningKeys implements [authserver.KeyStore]: it opens every sealed key. A
// key that does not open (another key-encryption key, or tampering) is an
// error, not a silent omission.
func (p *Store) SigningKeys(ctx context.Context) ([]*authserver.SigningKey, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	rows, err := p.pool.Query(ctx, "SELECT kid, alg, sealed_jwk, created_at, active_at, retire_at FROM signing_keys")
	if err != nil {
		return nil, pgErr(err)
	}
	defer rows.Close()
	var out []*authserver.SigningKey
	for rows.Next() {
		var k authserver.SigningKey
		var sealed []byte
		var retire *time.Time
		if err := rows.Scan(&k.ID, &k.Algorithm, &sealed, &k.CreatedAt, &k.ActiveAt, &retire); err != nil {
			return nil, pgErr(err)
		}
		if retire != nil {
			k.RetireAt = *retire
		}
		if k.PrivateJWK, err = p.seal.Open(sealed, signingKeyContext(k.ID)); err != nil {
			return nil, fmt.Errorf("pgstore: signing key %q does not open under the configured key-encryption keys", k.ID)
		}
		out = append(out, &k)
	}
	return out, pgErr(rows.Err())
}

// SaveSigningKey implements [authserver.KeyStore]; the private key is sealed.
func (p *Store) SaveSigningKey(ctx context.Context, k *authserver.SigningKey) error {
	var retire *time.Time
	if !k.RetireAt.IsZero() {
		retire = &k.RetireAt
	}
	_, err := p.exec(ctx, `INSERT INTO signing_keys (kid, alg, sealed_jwk, created_at, active_at, retire_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kid) DO UPDATE SET retire_at = EXCLUDED.retire_at`,
		k.ID, k.Algorithm, p.seal.Seal(k.PrivateJWK, signingKeyContext(k.ID)), k.CreatedAt, k.ActiveAt, retire)
	return err
}

// DeleteSigningKey implements [authserver.KeyStore].
func (p *Store) DeleteSigningKey(ctx context.Context, id string) error {
	_, err := p.exec(ctx, "DELETE FROM signing_keys WHERE kid = $1", id)
	return err
}

// RevokeAccessToken implements [authserver.RevocationStore].
func (p *Store) RevokeAccessToken(ctx context.Context, jti string, expires time.Time) error {
	_, err := p.exec(ctx, `INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, $2)
		ON CONFLICT (jti) DO NOTHING`, jti, expires)
	return err
}

// AccessTokenRevoked implements [authserver.RevocationStore].
func (p *Store) AccessTokenRevoked(ctx context.Context, jti string) (bool, error) {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	var revoked bool
	err := p.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM revoked_access_tokens WHERE jti = $1)", jti).Scan(&revoked)
	return revoked, pgErr(err)
}

// SavePending implements [authserver.PendingStore]. Past MaxPending records it
// drops the expired ones and, if still full, refuses with
// temporarily_unavailable; the count stops at the bound.
func (p *Store) SavePending(ctx context.Context, pa *authserver.PendingAuthorization) error {
	data, err := json.Marshal(pa)
	if err != nil {
		return err
	}
	insert := func() (bool, error) {
		tag, err := p.exec(ctx, `INSERT INTO pending_authorizations (id, data, expires_at)
			SELECT $1, $2, $3
			WHERE (SELECT count(*) FROM (SELECT 1 FROM pending_authorizations LIMIT $4) AS bounded) < $4
			ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, expires_at = EXCLUDED.expires_at`,
			pa.ID, data, pa.ExpiresAt, p.maxPending)
		return err == nil && tag.RowsAffected() > 0, err
	}
	ok, err := insert()
	if err != nil || ok {
		return err
	}
	// Records expire PendingTTL after they are saved, so this record's
	// expiry less PendingTTL is now on the server's clock.
	if _, err := p.exec(ctx, "DELETE FROM pending_authorizations WHERE expires_at <= $1",
		pa.ExpiresAt.Add(-authserver.PendingTTL)); err != nil {
		return err
	}
	if ok, err = insert(); err != nil || ok {
		return err
	}
	return errPendingFull
}

// TakePending implements [authserver.PendingStore]: the row is locked while
// match runs and deleted only if it matched.
func (p *Store) TakePending(ctx context.Context, id string, now time.Time, match func(*authserver.PendingAuthorization) bool) (*authserver.PendingAuthorization, error) {
	var out *authserver.PendingAuthorization
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		qctx, cancel := p.ctx(ctx)
		defer cancel()
		var data []byte
		err := tx.QueryRow(qctx, `SELECT data FROM pending_authorizations
			WHERE id = $1 AND expires_at > $2 FOR UPDATE`, id, now).Scan(&data)
		if err != nil {
			return pgErr(err)
		}
		// match gets a copy of its own: what it does to it is not
		// returned.
		var pa, shown authserver.PendingAuthorization
		if err := errors.Join(json.Unmarshal(data, &pa), json.Unmarshal(data, &shown)); err != nil {
			return fmt.Errorf("pgstore: corrupt pending authorization: %w", err)
		}
		if !match(&shown) {
			return authserver.ErrNotFound
		}
		if _, err := tx.Exec(qctx, "DELETE FROM pending_authorizations WHERE id = $1", id); err != nil {
			return pgErr(err)
		}
		out = &pa
		return nil
	})
	if err != nil {
		return nil, pgErr(err)
	}
	return out, nil
}

// Sweep implements [authserver.Sweeper]: it deletes records that expired before
// now.
func (p *Store) Sweep(ctx context.Context, now time.Time) error {
	if err := p.sweepDeviceCodes(ctx, now); err != nil {
		return err
	}
	for _, table := range []string{"codes", "grants", "refresh_tokens", "consents", "revoked_access_tokens", "pending_authorizations", "upstream_tokens",
		"connected_accounts", "connect_tickets"} {
		if _, err := p.exec(ctx, "DELETE FROM "+table+" WHERE expires_at < $1", now); err != nil {
			return err
		}
	}
	return nil
}
