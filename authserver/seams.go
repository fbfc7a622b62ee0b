package authserver

import (
	"context"
	"net/url"
	"time"

	"golang.org/x/oauth2"
)

// Login is an identity provider at which users log in before the consent
// page ([Config.Login]): the server sends the browser to the provider with
// a fresh state, nonce and PKCE verifier ([Login.Start]), and turns the
// provider's redirect back to [Server.UpstreamCallbackURL] into a verified
// user ([Login.Callback]). The server keeps the login's state, binds it to
// the browser, applies the allow-list and grant policy and issues its own
// codes and tokens; the provider only speaks to the identity provider.
// Package authserver/upstream has OpenID Connect and plain OAuth 2.0
// (GitHub) implementations.
type Login interface {
	// Issuer names the provider: its issuer identifier, which with the
	// user's identifier there makes the subject of our grants, and a
	// target of the token exchange for the provider's access token.
	Issuer() string
	// AuthorizationEndpoint returns the provider's authorization endpoint,
	// where Start sends browsers: the consent page allows the redirect
	// there. An error means the provider cannot be reached now.
	AuthorizationEndpoint(ctx context.Context) (string, error)
	// Start returns the URL of the provider's authorization request for
	// the login l.
	Start(ctx context.Context, l *LoginRequest) (string, error)
	// Callback verifies the provider's redirect query q for the login l
	// and returns the user and the provider's tokens. An error that wraps
	// an *oauthmeta.Error is the answer the MCP client gets (access_denied
	// for a refusal); any other is temporarily_unavailable. Every error is
	// logged, so its text must never hold a token, code or secret.
	Callback(ctx context.Context, q url.Values, l *LoginRequest) (*UpstreamIdentity, *oauth2.Token, error)
}

// Readier is what [Server.Ready] asks of a [Login] that can say whether
// logins can be served now: for an OpenID Connect provider, its metadata
// and key set fetched and fresh. A Login without it is asked for its
// authorization endpoint instead. Ready answers from memory while what it
// checks is fresh, and fetches at most once, bounded by ctx, when it is
// not. Its error is logged, never shown to a caller.
type Readier interface {
	Ready(ctx context.Context) error
}

// LoginRequest is one login at a [Login] provider: the random, single-use
// values the server made for it, and the redirect URI.
type LoginRequest struct {
	// State, Nonce and Verifier are the "state", the OpenID Connect
	// "nonce" and the PKCE code verifier of the login.
	State, Nonce, Verifier string
	// RedirectURI is [Server.UpstreamCallbackURL] (with several
	// providers, [Server.UpstreamCallbackURLFor]).
	RedirectURI string
	// LoginHint is the user's email address when it chose this provider
	// among several ([Config.HomeRealms]): the provider may offer it as
	// the account to sign in with (the OpenID Connect login_hint). Empty
	// otherwise.
	LoginHint string
}

// UpstreamIdentity is a user as the [Login] provider authenticated them.
type UpstreamIdentity struct {
	// Issuer and Subject are the provider's "iss" and "sub": together they
	// identify the user.
	Issuer, Subject string
	// Email, EmailVerified and Name are the standard claims, when present.
	Email         string
	EmailVerified bool
	Name          string
	// Groups is the configured groups claim.
	Groups []string
	// GroupsIncomplete says the provider did not list all the user's
	// groups (group overage: Microsoft Entra ID sends a reference to
	// another API instead of a groups claim when a user is in too many).
	// Groups is then not the user's list: a login that an allow-list or
	// grant policy entry naming a group could decide is refused, never
	// read as "not a member".
	GroupsIncomplete bool
}

// Vault keeps the tokens of the [Login] provider on the server, sealed,
// bound to the grant of the login that obtained them, for the RFC 8693
// token exchange by which a resource server gets the user's access token
// at the provider ([Config.Vault]). Package authserver/upstream has one.
type Vault interface {
	// Keep seals the tokens of a finished login at the provider issuer
	// ([Login.Issuer]) into a new record, kept until expires, and returns
	// the record's ID.
	Keep(ctx context.Context, issuer string, tok *oauth2.Token, expires time.Time) (string, error)
	// Bind hands the record id to grant g, which then owns it and sets its
	// lifetime. A record already bound to another grant is an error.
	Bind(ctx context.Context, id string, g *Grant) error
	// Token returns g's access token at the provider, with its type and
	// expiry, for the token exchange: refreshed first when it has expired
	// or is about to, never with the refresh token. A non-empty issuer is
	// the provider the exchange asked for: a token of another provider is
	// refused with an *oauthmeta.Error invalid_target; "" accepts the
	// grant's provider, whichever it is. [ErrNotFound] means the grant has
	// no such token (any more) and the user must log in again; an
	// *oauthmeta.Error is sent as it is; any other error is an unavailable
	// provider.
	Token(ctx context.Context, g *Grant, issuer string) (*oauth2.Token, error)
	// Drop deletes the record id ("" is none), logging a failure: records
	// are swept when they expire anyway.
	Drop(ctx context.Context, id string)
}
