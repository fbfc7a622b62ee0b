package authserver

import (
	"context"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// grantLedger records grants and issues their tokens, and is the one
// place grants are revoked. The grant handlers of the token endpoint and
// the revocation endpoint share it.
type grantLedger struct {
	grants  GrantStore
	refresh RefreshTokenStore
	tokens  *accessTokens
	vault   Vault // nil without a token vault
	// connect deletes the accounts connected through a revoked grant;
	// nil without Config.Connect.
	connect *connector
	clock   clock.Func
	// accessTTL is the lifetime of a grant without refresh tokens.
	accessTTL time.Duration
}

// issue signs an access token for the grant and, when refresh is
// allowed, starts or continues its refresh token family.
func (l *grantLedger) issue(ctx context.Context, g *Grant, scopes, resources []string, withRefresh bool, now time.Time, jkt string) (*oauthmeta.TokenResponse, error) {
	access, err := l.tokens.issue(ctx, g, scopes, resources, now, jkt)
	if err != nil {
		return nil, err
	}
	var refresh string
	if withRefresh {
		refresh = randomToken(32)
		err := l.refresh.SaveRefreshToken(ctx, &RefreshToken{
			Key: tokenKey(refresh), GrantID: g.ID, ClientID: g.ClientID, IssuedAt: now, ExpiresAt: g.ExpiresAt,
		})
		if err != nil {
			return nil, err
		}
	}
	return l.tokens.response(access, refresh, scopes, jkt), nil
}

// standalone records a grant without refresh tokens and issues an access
// token for it, for resources (checked by the caller; none means
// DefaultResource).
func (l *grantLedger) standalone(ctx context.Context, clientID, subject string, scopes, resources []string, jkt string) (*oauthmeta.TokenResponse, error) {
	now := l.clock.Now()
	grant := &Grant{
		ID: randomToken(16), ClientID: clientID, Subject: subject, Scopes: scopes, Resources: resources,
		CreatedAt: now, ExpiresAt: now.Add(l.accessTTL),
	}
	if err := l.grants.SaveGrant(ctx, grant); err != nil {
		return nil, err
	}
	return l.issue(ctx, grant, scopes, resources, false, now, jkt)
}

// revoke revokes a grant and deletes its upstream tokens: every
// revocation path (revocation endpoint, refresh token reuse, code replay)
// goes through it. A grant that is gone already is no error.
func (l *grantLedger) revoke(ctx context.Context, id string) error {
	err := l.grants.RevokeGrant(ctx, id)
	if l.vault != nil && err == nil {
		if g, gerr := l.grants.Grant(ctx, id); gerr == nil {
			l.vault.Drop(ctx, g.UpstreamTokens)
		}
	}
	if err == nil {
		l.connect.dropGrant(ctx, id)
	}
	return ignoreNotFound(err)
}
