package authserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/internal/seal"
)

// upstreamRefreshMargin: an upstream access token this close to its
// expiry is refreshed before it is handed out, so that it does not expire
// on its way to the upstream API.
const upstreamRefreshMargin = 30 * time.Second

// TokenVaultConfig keeps the upstream provider's access and refresh tokens
// on the server, sealed, bound to the grant of the login that obtained
// them, for the RFC 8693 token exchange by which a resource server gets
// the user's upstream access token (see [Config.TokenVault]).
type TokenVaultConfig struct {
	// Keys seal the tokens at rest with AES-256-GCM: each 32 random
	// bytes. The first seals; every key opens, so a key is replaced by
	// putting the new one first and keeping the old one until the grants
	// it sealed have expired. Empty means a random key made by New for this
	// process only (a warning is logged): tokens kept before a restart, or
	// by another replica, then no longer open and their users must log in
	// again.
	Keys [][]byte
	// Audience is the name resource servers send as the token exchange's
	// "audience" to ask for the upstream token, e.g. "github". The
	// upstream issuer identifier is always accepted, as "audience" or
	// "resource". Empty means only the issuer identifier.
	Audience string
	// ResourceServers maps the client_id of a pre-registered confidential
	// client, allowed the token exchange grant, to the resource (the MCP
	// server URI) whose identity it is: it may exchange only access tokens
	// whose "aud" holds that resource. Other clients get
	// unauthorized_client. Empty means the exchange is not offered.
	ResourceServers map[string]string
}

// vault seals upstream tokens into the UpstreamTokenStore and hands them
// out, refreshed, at the token exchange: the engine's upstreamVault.
type vault struct {
	ring  *seal.Ring
	store UpstreamTokenStore
	up    *upstream
	now   func() time.Time
	log   *slog.Logger
	// refreshes runs one upstream refresh per record at a time in this
	// process; across replicas the record's lease does (vault_lease.go).
	refreshes singleflight.Group
}

var _ upstreamVault = (*vault)(nil)

// vaultedToken is what a record seals.
type vaultedToken struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// newVault validates c and returns the vault of the upstream login up,
// keeping its records in store; nil without c. The resource servers it
// names must be pre-registered in clients.
func newVault(c *TokenVaultConfig, up *upstream, store UpstreamTokenStore, clients *clientRegistry, now func() time.Time, log *slog.Logger) (*vault, error) {
	if c == nil {
		return nil, nil
	}
	if up == nil {
		return nil, configErr("TokenVault", "needs Upstream")
	}
	keys := c.Keys
	if len(keys) == 0 {
		k := make([]byte, seal.KeySize)
		_, _ = rand.Read(k) // never fails (crypto/rand, Go 1.24+)
		keys = [][]byte{k}
		log.Warn("TokenVault has no key: upstream tokens are sealed under a random key of this process; " +
			"they will not open after a restart or on another replica")
	}
	ring, err := seal.NewRing(keys[0], keys[1:]...)
	if err != nil {
		return nil, configErr("TokenVault.Keys", err.Error())
	}
	for id, res := range c.ResourceServers {
		if err := clients.checkExchanger("TokenVault.ResourceServers", id, res); err != nil {
			return nil, err
		}
	}
	log.Info("upstream token vault", "sealing_key_id", ring.KeyID())
	return &vault{ring: ring, store: store, up: up, now: now, log: log}, nil
}

// sealContext binds a sealed value to its record.
func sealContext(id string) string { return "mcpauth upstream tokens\x00" + id }

// keep seals tok into a new record, kept until expires, and returns its ID.
func (v *vault) keep(ctx context.Context, tok *oauth2.Token, expires time.Time) (string, error) {
	if tok.AccessToken == "" {
		return "", errors.New("authserver: the upstream token response has no access_token")
	}
	id := randomToken(16)
	rec := &UpstreamTokens{ID: id, Version: 1, ExpiresAt: expires}
	t := &vaultedToken{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType, Expiry: tok.Expiry}
	if tok.ExpiresIn > 0 { // x/oauth2 sets Expiry by time.Now, not the server's clock
		t.Expiry = v.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	if err := v.sealInto(rec, t); err != nil {
		return "", err
	}
	return id, v.store.SaveUpstreamTokens(ctx, rec)
}

func (v *vault) sealInto(rec *UpstreamTokens, t *vaultedToken) error {
	pt, err := json.Marshal(t)
	if err != nil {
		return err
	}
	rec.Sealed = v.ring.Seal(pt, sealContext(rec.ID))
	return nil
}

func (v *vault) open(rec *UpstreamTokens) (*vaultedToken, error) {
	pt, err := v.ring.Open(rec.Sealed, sealContext(rec.ID))
	if err != nil {
		return nil, err
	}
	var t vaultedToken
	if err := json.Unmarshal(pt, &t); err != nil {
		return nil, fmt.Errorf("authserver: corrupt upstream tokens: %w", err)
	}
	return &t, nil
}

// bind attaches the record id to the grant g, which now owns it and sets
// its lifetime. A record already bound to another grant is left alone.
func (v *vault) bind(ctx context.Context, id string, g *Grant) error {
	rec, err := v.store.UpstreamTokens(ctx, id)
	if err != nil {
		return err
	}
	if rec.GrantID != "" && rec.GrantID != g.ID {
		return errors.New("authserver: upstream tokens already bound to another grant")
	}
	rec.GrantID, rec.ExpiresAt = g.ID, g.ExpiresAt
	rec.Version++
	return v.store.SaveUpstreamTokens(ctx, rec)
}

// drop deletes the record id, logging a failure (the sweep removes the
// record when it expires anyway).
func (v *vault) drop(ctx context.Context, id string) {
	if id == "" {
		return
	}
	if err := v.store.DeleteUpstreamTokens(ctx, id); err != nil {
		v.log.WarnContext(ctx, "deleting upstream tokens failed", "err", err)
	}
}

// token returns g's upstream access token for the token exchange (see
// upstreamVault): the current one, refreshed first when due, without the
// refresh token.
func (v *vault) token(ctx context.Context, g *Grant) (*oauth2.Token, error) {
	t, err := v.current(ctx, g)
	if err != nil {
		return nil, err
	}
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, Expiry: t.Expiry}, nil
}

// current returns g's upstream tokens, refreshed upstream first when the
// access token has expired or is about to.
func (v *vault) current(ctx context.Context, g *Grant) (*vaultedToken, error) {
	rec, t, err := v.load(ctx, g)
	if err != nil {
		return nil, err
	}
	if v.fresh(t) {
		return t, nil
	}
	if t.RefreshToken == "" {
		v.drop(ctx, rec.ID)
		return nil, errUpstreamEnded
	}
	// The shared refresh outlives one caller's cancellation; the
	// upstream timeout bounds it.
	shared := context.WithoutCancel(ctx)
	return flight.Do(ctx, &v.refreshes, rec.ID, func() (*vaultedToken, error) { return v.refresh(shared, g) })
}

// load reads and opens g's record.
func (v *vault) load(ctx context.Context, g *Grant) (*UpstreamTokens, *vaultedToken, error) {
	if g.UpstreamTokens == "" {
		return nil, nil, errVaultEmpty
	}
	rec, err := v.store.UpstreamTokens(ctx, g.UpstreamTokens)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, errVaultEmpty
	}
	if err != nil {
		return nil, nil, err
	}
	if rec.GrantID != g.ID {
		return nil, nil, errVaultEmpty
	}
	t, err := v.open(rec)
	if err != nil {
		// Sealed under a key no longer configured (or a random key of an
		// earlier process): the user must log in again.
		v.log.WarnContext(ctx, "upstream tokens do not open under the configured keys", "err", err)
		return nil, nil, errVaultEmpty
	}
	return rec, t, nil
}

func (v *vault) fresh(t *vaultedToken) bool {
	return t.Expiry.IsZero() || v.now().Add(upstreamRefreshMargin).Before(t.Expiry)
}
