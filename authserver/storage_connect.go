package authserver

import (
	"context"
	"time"
)

// ConnectStore keeps the third-party accounts users connected
// ([Config.Connect]) and the short-lived, single-use tickets of the
// connect flow. An account names the sealed record of its tokens in the
// [UpstreamTokenStore]; a store never sees a token in clear, and a ticket
// is stored under the hash of its random value, never the value itself.
type ConnectStore interface {
	// ConnectedAccount returns the user's account at the provider, or
	// [ErrNotFound].
	ConnectedAccount(ctx context.Context, subject, provider string) (*ConnectedAccount, error)
	// SaveConnectedAccount stores a, replacing the user's account at the
	// same provider.
	SaveConnectedAccount(ctx context.Context, a *ConnectedAccount) error
	// DeleteConnectedAccount removes a's user's account at a's provider
	// if it still names a.Tokens (a newer connection is left alone); a
	// missing one is no error.
	DeleteConnectedAccount(ctx context.Context, a *ConnectedAccount) error
	// ConnectedAccountsOfGrant lists the accounts connected through the
	// grant grantID, which the server deletes when the grant ends.
	ConnectedAccountsOfGrant(ctx context.Context, grantID string) ([]*ConnectedAccount, error)
	// SaveConnectTicket stores a new ticket. A store that is full answers
	// temporarily_unavailable (an *oauthmeta.Error). A reference
	// ([TicketRef]) whose subject already has [MaxConnectRefsPerSubject]
	// references stored displaces the one of them that expires first.
	SaveConnectTicket(ctx context.Context, t *ConnectTicket) error
	// ConnectTicket returns the ticket id if it has not expired at now,
	// without using it up; [ErrNotFound] otherwise.
	ConnectTicket(ctx context.Context, id string, now time.Time) (*ConnectTicket, error)
	// TakeConnectTicket deletes and returns the ticket id if it has not
	// expired at now and match accepts it, atomically, so a ticket is used
	// once; [ErrNotFound] otherwise (a ticket match refuses stays).
	TakeConnectTicket(ctx context.Context, id string, now time.Time, match func(*ConnectTicket) bool) (*ConnectTicket, error)
}

// MaxConnectTickets bounds the tickets of connect flows in progress in
// each store that keeps them, since any holder of a valid access token
// can ask for one: past it, new ones get temporarily_unavailable.
const MaxConnectTickets = 10000

// MaxConnectRefsPerSubject bounds the connect references ([TicketRef])
// stored for one user: a new one displaces the user's oldest, so that a
// client (or a stolen token) asking for connect URIs in a loop keeps at
// most this many of the store's [MaxConnectTickets] places, while the
// user's newest link always works. Each store finds a user's references
// by an index, whatever the number of tickets.
const MaxConnectRefsPerSubject = 20

// ConnectedAccount is a user's account at a third-party provider of
// [Config.Connect]: the sealed record of its tokens and the grant through
// which the user connected it, whose end ends it.
type ConnectedAccount struct {
	// Subject is our user; Provider the [ConnectProvider.Name].
	Subject  string `json:"sub"`
	Provider string `json:"provider"`
	// Tokens is the ID of the [UpstreamTokens] record holding the
	// provider's tokens, sealed, bound to GrantID.
	Tokens string `json:"tokens"`
	// GrantID is the grant whose access token asked for the connection,
	// of the MCP client ClientID; revoking it deletes the account.
	GrantID  string `json:"grant_id"`
	ClientID string `json:"client_id"`
	// ConnectedAt is when the user connected the account; ExpiresAt the
	// end of GrantID, when the account may be dropped.
	ConnectedAt time.Time `json:"connected_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// The kinds of [ConnectTicket].
const (
	// TicketRef is the reference in a connect URI, made at the token
	// exchange.
	TicketRef = "ref"
	// TicketLogin waits for the user's login at [Config.Login] that
	// identifies the browser.
	TicketLogin = "login"
	// TicketConfirm waits for the confirmation form of the connect page.
	TicketConfirm = "confirm"
	// TicketAuthorize waits for the provider's authorization response.
	TicketAuthorize = "authorize"
)

// ConnectTicket is one step of a connect flow, single-use and short-lived.
type ConnectTicket struct {
	// ID is the kind's prefix and the hash of the ticket's random value.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Ref is the ID of the reference ticket the flow serves (not for a
	// reference itself). Disconnect flows have none.
	Ref string `json:"ref,omitempty"`
	// Disconnect says the flow disconnects the account instead.
	Disconnect bool `json:"disconnect,omitempty"`
	// Provider is the [ConnectProvider.Name].
	Provider string `json:"provider"`
	// Subject is the user the reference was made for (from the verified
	// access token), or who logged in for a disconnect.
	Subject string `json:"sub,omitempty"`
	// Caller is the client_id of the resource server whose exchange made
	// the reference; ClientID the MCP client, and GrantID the grant, of
	// the access token it exchanged.
	Caller   string `json:"caller,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	GrantID  string `json:"grant_id,omitempty"`
	// BrowserHash and CSRFHash bind a step to the browser that started it
	// and to the form it was shown.
	BrowserHash string `json:"browser_hash,omitempty"`
	CSRFHash    string `json:"csrf_hash,omitempty"`
	// Nonce and Verifier are the OpenID Connect nonce and PKCE verifier
	// of a login or authorization at a provider.
	Nonce    string `json:"nonce,omitempty"`
	Verifier string `json:"verifier,omitempty"`
	// ExpiresAt ends the ticket.
	ExpiresAt time.Time `json:"expires_at"`
}
