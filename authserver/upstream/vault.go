package upstream

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/internal/seal"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// upstreamRefreshMargin: an upstream access token this close to its
// expiry is refreshed before it is handed out, so that it does not expire
// on its way to the upstream API.
const upstreamRefreshMargin = 30 * time.Second

// VaultConfig configures the vault that keeps the provider's access and
// refresh tokens on the server, sealed, bound to the grant of the login
// that obtained them, for the RFC 8693 token exchange by which a resource
// server gets the user's access token at the provider (see
// [authserver.Config.Vault], which takes [VaultConfig.Open]).
type VaultConfig struct {
	// Keys seal the tokens at rest with AES-256-GCM: each 32 random
	// bytes. The first seals; every key opens, so a key is replaced by
	// putting the new one first and keeping the old one until the grants
	// it sealed have expired. Empty means a random key made by Open for
	// this process only (a warning is logged): tokens kept before a
	// restart, or by another replica, then no longer open and their users
	// must log in again.
	Keys [][]byte
	// Provider is the login whose tokens are kept: expired access tokens
	// are refreshed there. Required, unless Providers is set.
	Provider Provider
	// Providers, instead of Provider, are the logins whose tokens are kept
	// when users log in at several ([authserver.Config.Logins]): each
	// record is marked with the issuer of the provider that issued its
	// tokens, is refreshed there, and is handed out only for that
	// provider. Their issuers must differ.
	Providers []Provider
	// Logger receives operational logs, never a token. Nil discards them.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// vault seals upstream tokens into the UpstreamTokenStore and hands them
// out, refreshed, at the token exchange.
type vault struct {
	ring  *seal.Ring
	store authserver.UpstreamTokenStore
	// ups are the providers, by issuer; one holds also the records of
	// before the issuer was sealed with the tokens.
	ups map[string]Provider
	// timeout is the longest call timeout of the providers.
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger
	// refreshes runs one upstream refresh per record at a time in this
	// process; across replicas the record's lease does (vault_lease.go).
	refreshes singleflight.Group
}

var _ authserver.Vault = (*vault)(nil)

// Errors of the vault.
var (
	// errVaultEmpty: the grant has no upstream tokens (any more).
	errVaultEmpty = fmt.Errorf("%w: no upstream tokens for this grant", authserver.ErrNotFound)
	// errUpstreamEnded: the upstream grant ended (refresh refused, or
	// expired without a refresh token): the user must log in again.
	errUpstreamEnded = fmt.Errorf("%w: the upstream grant has ended", authserver.ErrNotFound)
	// errOtherProvider: the grant's user logged in at another provider
	// than the one the exchange asked for.
	errOtherProvider = &oauthmeta.Error{Code: oauthmeta.CodeInvalidTarget,
		Description: "the user did not log in at this identity provider"}
	// errVaultBusy: another refresh held the lease for as long as this one
	// could wait.
	errVaultBusy = &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable,
		Description: "the upstream token is being refreshed; try again"}
)

// vaultedToken is what a record seals.
type vaultedToken struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Issuer is the provider's issuer identifier; empty in records kept
	// before it was sealed too, which only a vault of one provider opens.
	Issuer string `json:"iss,omitempty"`
}

// Open validates c and returns the vault keeping its records in store:
// the server calls it once, with its own store of upstream tokens, when
// Open is its [authserver.Config.Vault]. Errors match
// [authserver.ErrConfig].
func (c VaultConfig) Open(store authserver.UpstreamTokenStore) (authserver.Vault, error) {
	providers := c.Providers
	switch {
	case c.Provider == nil && len(c.Providers) == 0:
		return nil, configErr("Vault", "needs a Provider")
	case c.Provider != nil && len(c.Providers) > 0:
		return nil, configErr("Vault", "set Provider or Providers, not both")
	case store == nil:
		return nil, configErr("Vault", "needs a store")
	case c.Provider != nil:
		providers = []Provider{c.Provider}
	}
	ups := make(map[string]Provider, len(providers))
	var timeout time.Duration
	for _, p := range providers {
		if p == nil {
			return nil, configErr("Vault.Providers", "holds nil")
		}
		if _, dup := ups[p.Issuer()]; dup {
			return nil, configErr("Vault.Providers", fmt.Sprintf("the issuer %.80q appears twice", p.Issuer()))
		}
		ups[p.Issuer()], timeout = p, max(timeout, p.callTimeout())
	}
	log := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
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
		return nil, configErr("Vault.Keys", err.Error())
	}
	log.Info("upstream token vault", "sealing_key_id", ring.KeyID())
	return &vault{ring: ring, store: store, ups: ups, timeout: timeout, now: clock.Func(c.Now).Now, log: log}, nil
}

// sealContext binds a sealed value to its record.
func sealContext(id string) string { return "mcpauth upstream tokens\x00" + id }

// Keep seals tok of the provider issuer into a new record, kept until
// expires, and returns its ID.
func (v *vault) Keep(ctx context.Context, issuer string, tok *oauth2.Token, expires time.Time) (string, error) {
	if tok.AccessToken == "" {
		return "", errors.New("upstream: the token response has no access_token")
	}
	if _, ok := v.ups[issuer]; !ok {
		return "", fmt.Errorf("upstream: the vault keeps no tokens of the provider %.80q", issuer)
	}
	id := randomToken(16)
	rec := &authserver.UpstreamTokens{ID: id, Version: 1, ExpiresAt: expires}
	t := &vaultedToken{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType,
		Expiry: tok.Expiry, Issuer: issuer}
	if tok.ExpiresIn > 0 { // x/oauth2 sets Expiry by time.Now, not the server's clock
		t.Expiry = v.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	if err := v.sealInto(rec, t); err != nil {
		return "", err
	}
	return id, v.store.SaveUpstreamTokens(ctx, rec)
}

func (v *vault) sealInto(rec *authserver.UpstreamTokens, t *vaultedToken) error {
	pt, err := json.Marshal(t)
	if err != nil {
		return err
	}
	rec.Sealed = v.ring.Seal(pt, sealContext(rec.ID))
	return nil
}

func (v *vault) open(rec *authserver.UpstreamTokens) (*vaultedToken, error) {
	pt, err := v.ring.Open(rec.Sealed, sealContext(rec.ID))
	if err != nil {
		return nil, err
	}
	var t vaultedToken
	if err := json.Unmarshal(pt, &t); err != nil {
		return nil, fmt.Errorf("upstream: corrupt tokens: %w", err)
	}
	return &t, nil
}

// Bind attaches the record id to the grant g, which now owns it and sets
// its lifetime. A record already bound to another grant is left alone.
func (v *vault) Bind(ctx context.Context, id string, g *authserver.Grant) error {
	rec, err := v.store.UpstreamTokens(ctx, id)
	if err != nil {
		return err
	}
	if rec.GrantID != "" && rec.GrantID != g.ID {
		return errors.New("upstream: the tokens are already bound to another grant")
	}
	rec.GrantID, rec.ExpiresAt = g.ID, g.ExpiresAt
	rec.Version++
	return v.store.SaveUpstreamTokens(ctx, rec)
}

// Drop deletes the record id, logging a failure (the sweep removes the
// record when it expires anyway).
func (v *vault) Drop(ctx context.Context, id string) {
	if id == "" {
		return
	}
	if err := v.store.DeleteUpstreamTokens(ctx, id); err != nil {
		v.log.WarnContext(ctx, "deleting upstream tokens failed", "err", err)
	}
}

// Token returns g's upstream access token for the token exchange (see
// [authserver.Vault]): the current one, refreshed first when due, without the
// refresh token; only of the provider issuer, unless it is "".
func (v *vault) Token(ctx context.Context, g *authserver.Grant, issuer string) (*oauth2.Token, error) {
	t, err := v.current(ctx, g, issuer)
	if err != nil {
		return nil, err
	}
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, Expiry: t.Expiry}, nil
}

// current returns g's upstream tokens, refreshed upstream first when the
// access token has expired or is about to.
func (v *vault) current(ctx context.Context, g *authserver.Grant, issuer string) (*vaultedToken, error) {
	rec, t, err := v.load(ctx, g)
	if err != nil {
		return nil, err
	}
	if issuer != "" && t.Issuer != issuer {
		return nil, errOtherProvider
	}
	if v.fresh(t) {
		return t, nil
	}
	if t.RefreshToken == "" {
		v.Drop(ctx, rec.ID)
		return nil, errUpstreamEnded
	}
	// The shared refresh outlives one caller's cancellation; the
	// upstream timeout bounds it.
	shared := context.WithoutCancel(ctx)
	return flight.Do(ctx, &v.refreshes, rec.ID, func() (*vaultedToken, error) { return v.refresh(shared, g) })
}

// load reads and opens g's record.
func (v *vault) load(ctx context.Context, g *authserver.Grant) (*authserver.UpstreamTokens, *vaultedToken, error) {
	if g.UpstreamTokens == "" {
		return nil, nil, errVaultEmpty
	}
	rec, err := v.store.UpstreamTokens(ctx, g.UpstreamTokens)
	if errors.Is(err, authserver.ErrNotFound) {
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
	if t.Issuer == "" && len(v.ups) == 1 {
		for iss := range v.ups { // kept before the issuer was sealed too
			t.Issuer = iss
		}
	}
	if _, ok := v.ups[t.Issuer]; !ok {
		// Of a provider no longer configured, or kept before the issuer
		// was sealed too while there are several now.
		return nil, nil, errVaultEmpty
	}
	return rec, t, nil
}

func (v *vault) fresh(t *vaultedToken) bool {
	return t.Expiry.IsZero() || v.now().Add(upstreamRefreshMargin).Before(t.Expiry)
}
