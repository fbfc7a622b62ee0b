package authserver

import (
	"context"
	"errors"
	"time"

	"golang.org/x/oauth2"
)

// upstreamVault is what the engine asks of the token vault
// ([Config.TokenVault]), the one seam between the endpoints and the
// broker's sealed store of upstream tokens: the upstream login keeps a
// login's tokens, the code exchange binds them to the grant it makes, the
// token exchange hands out the access token, and a revoked or dead grant
// drops them. Nil means no vault.
type upstreamVault interface {
	// keep seals the tokens of a finished upstream login into a new
	// record, kept until expires, and returns the record's ID.
	keep(ctx context.Context, tok *oauth2.Token, expires time.Time) (string, error)
	// bind hands the record id to grant g, which then owns it and sets
	// its lifetime. A record already bound to another grant is an error.
	bind(ctx context.Context, id string, g *Grant) error
	// token returns g's upstream access token, with its type and expiry,
	// for the token exchange: refreshed upstream first when it has
	// expired or is about to, never with the refresh token. The errors
	// the exchange answers are errVaultEmpty, errUpstreamEnded and
	// errVaultBusy; a store's *oauthmeta.Error passes through, and any
	// other error is an unavailable provider.
	token(ctx context.Context, g *Grant) (*oauth2.Token, error)
	// drop deletes the record id ("" is none), logging a failure: the
	// sweep removes the record when it expires anyway.
	drop(ctx context.Context, id string)
}

// Errors of the vault, mapped to protocol errors by the token exchange.
var (
	// errVaultEmpty: the grant has no upstream tokens (any more).
	errVaultEmpty = errors.New("authserver: no upstream tokens for this grant")
	// errUpstreamEnded: the upstream grant ended (refresh refused, or
	// expired without a refresh token): the user must log in again.
	errUpstreamEnded = errors.New("authserver: the upstream grant has ended")
	// errVaultBusy: another refresh held the lease for as long as this one
	// could wait.
	errVaultBusy = errors.New("authserver: another replica is refreshing the upstream tokens")
)
