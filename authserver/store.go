package authserver

import (
	"context"
	"time"
)

// Storage groups the per-concern stores the server uses. A nil field means
// the in-memory implementation ([MemoryStore]). Every store must be safe
// for concurrent use, return [ErrNotFound] for a missing key, and never
// hand out a record it will later modify (the server may read a record
// while another request updates it).
//
// A store may additionally implement [Sweeper]; the server then calls it
// from time to time to drop expired records.
//
// With pgstore, several replicas share one database: codes redeem and
// refresh tokens rotate once across all of them (a store that also
// implements [RefreshTokenUser] does a refresh in one step), a login may
// visit a different replica at each step, signing keys are re-read every
// [Config.KeyReloadInterval], and a database outage answers
// temporarily_unavailable. Replicas also share one replay store
// ([Config.Replay]) for DPoP proofs, client assertions and JWT grants
// (package redisreplay keeps it on Redis).
//
// Package boltstore keeps every store in one bbolt file, package pgstore
// in PostgreSQL, shared by replicas; storagetest.Run checks an
// implementation against this contract.
type Storage struct {
	Clients       ClientStore
	Codes         CodeStore
	Grants        GrantStore
	RefreshTokens RefreshTokenStore
	Consents      ConsentStore
	Keys          KeyStore
	Revocations   RevocationStore
	Pending       PendingStore
	// UpstreamTokens keeps the upstream provider's tokens, sealed, for
	// [Config.Vault].
	UpstreamTokens UpstreamTokenStore
	// Connect keeps connected third-party accounts and the connect flow's
	// tickets, for [Config.Connect].
	Connect ConnectStore
	// Devices keeps the codes of the device authorization grant, for
	// [Config.Device].
	Devices DeviceCodeStore
}

// ClientStore keeps registered clients (static and dynamic; URL client_ids
// are never stored).
type ClientStore interface {
	Client(ctx context.Context, id string) (*Client, error)
	SaveClient(ctx context.Context, c *Client) error
}

// CodeStore keeps authorization codes under the hash of the code.
type CodeStore interface {
	SaveCode(ctx context.Context, c *Code) error
	Code(ctx context.Context, key string) (*Code, error)
	// RedeemCode atomically records that the code was redeemed into the
	// grant grantID. If it was already redeemed it changes nothing and
	// returns the stored code (whose RedeemedBy names the first grant) with
	// [ErrAlreadyUsed].
	RedeemCode(ctx context.Context, key, grantID string) (*Code, error)
}

// GrantStore keeps grants: one per successful code redemption, shared by
// the refresh token family and the access tokens issued from it.
type GrantStore interface {
	SaveGrant(ctx context.Context, g *Grant) error
	Grant(ctx context.Context, id string) (*Grant, error)
	// RevokeGrant marks the grant revoked; its refresh tokens stop working
	// and its access tokens become inactive for introspection.
	RevokeGrant(ctx context.Context, id string) error
}

// RefreshTokenStore keeps refresh tokens under the hash of the token.
type RefreshTokenStore interface {
	SaveRefreshToken(ctx context.Context, t *RefreshToken) error
	RefreshToken(ctx context.Context, key string) (*RefreshToken, error)
	// RotateRefreshToken atomically marks the token under key as rotated
	// and saves next. If key was already rotated it saves nothing and
	// returns [ErrAlreadyUsed]: the caller treats that as reuse.
	RotateRefreshToken(ctx context.Context, key string, next *RefreshToken) error
}

// RefreshTokenUser is implemented by a store that keeps both the refresh
// tokens and the grants. When [Storage.RefreshTokens] and [Storage.Grants]
// are that one store, the server refreshes through it in one step (one
// statement on PostgreSQL) instead of reading the token, then its grant,
// then rotating.
type RefreshTokenUser interface {
	// UseRefreshToken atomically rotates the refresh token under u.Key
	// into its successor u.NextKey if [RefreshUse.Admits] accepts the
	// token and its grant, and returns the grant. The successor has the
	// grant, client and expiry of the token it replaces, was issued at
	// u.Now and is not rotated. Otherwise it changes nothing and returns
	// [ErrNotFound], whatever the reason: the caller reads the records to
	// answer precisely (and to treat a rotated token as reuse).
	UseRefreshToken(ctx context.Context, u RefreshUse) (*Grant, error)
}

// RefreshUse is one presentation of a refresh token, for
// [RefreshTokenUser].
type RefreshUse struct {
	// Key is the base64url SHA-256 of the presented token; NextKey that
	// of its successor.
	Key, NextKey string
	// ClientID is the authenticated client of the request.
	ClientID string
	// JKT is the thumbprint of the request's DPoP key; empty without a
	// proof.
	JKT string
	// Now is the time of the request.
	Now time.Time
}

// Admits reports whether a [RefreshTokenUser] rotates t, whose grant is g
// (nil when missing): t was never rotated and was issued to u.ClientID; g
// exists and is not revoked; u.Now is before the expiry of both; and g is
// bound to no DPoP key or to u.JKT. These are the refresh request's own
// checks, so a store that applies them another way (in SQL, say) must
// apply exactly these.
func (u RefreshUse) Admits(t *RefreshToken, g *Grant) bool {
	return !t.Rotated && u.check(t, g) == nil
}

// ConsentStore remembers what a user approved for a client, used only with
// [Config.RememberConsent].
type ConsentStore interface {
	Consent(ctx context.Context, subject, clientID string) (*Consent, error)
	SaveConsent(ctx context.Context, c *Consent) error
}

// KeyStore keeps the signing keys, private parts included.
type KeyStore interface {
	SigningKeys(ctx context.Context) ([]*SigningKey, error)
	SaveSigningKey(ctx context.Context, k *SigningKey) error
	DeleteSigningKey(ctx context.Context, id string) error
}

// RevocationStore remembers individually revoked access tokens (by jti)
// until they expire.
type RevocationStore interface {
	RevokeAccessToken(ctx context.Context, jti string, expires time.Time) error
	AccessTokenRevoked(ctx context.Context, jti string) (bool, error)
}

// PendingStore keeps what one login holds between two of its requests, so
// that each request may reach a different replica: today the authorization
// request waiting on the consent page. Implementations bound the number of
// records: a full store either drops its least recently used record or
// answers temporarily_unavailable, never grows. The server saves a record
// [PendingTTL] before its ExpiresAt, so a full store may take ExpiresAt
// less PendingTTL as the time and drop the records expired at it.
type PendingStore interface {
	SavePending(ctx context.Context, p *PendingAuthorization) error
	// TakePending atomically removes and returns the record under id if it
	// has not expired at now and match accepts it. Otherwise it changes
	// nothing and returns [ErrNotFound], so a wrong guess cannot burn the
	// user's request. match is called at most once, with the store's
	// consistency guarantees held, and must not block.
	TakePending(ctx context.Context, id string, now time.Time, match func(*PendingAuthorization) bool) (*PendingAuthorization, error)
}

// Sweeper is implemented by stores that can drop records that expired
// before now.
type Sweeper interface {
	Sweep(ctx context.Context, now time.Time) error
}

// Code is an issued authorization code (RFC 6749 §4.1.2), bound to
// everything the token request must repeat.
type Code struct {
	// Key is the base64url SHA-256 of the code; the code itself is never
	// stored.
	Key         string `json:"key"`
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	// RedirectURISent records whether the authorization request carried
	// redirect_uri, in which case the token request must repeat it.
	RedirectURISent bool      `json:"redirect_uri_sent"`
	Challenge       string    `json:"code_challenge"`
	Scopes          []string  `json:"scopes,omitempty"`
	Resources       []string  `json:"resources,omitempty"`
	Subject         string    `json:"sub"`
	Refresh         bool      `json:"refresh"`
	IssuedAt        time.Time `json:"iat"`
	// UpstreamTokens is the ID of the upstream tokens the login obtained,
	// in the [UpstreamTokenStore]; empty without [Config.Vault].
	UpstreamTokens string    `json:"upstream_tokens,omitempty"`
	ExpiresAt      time.Time `json:"exp"`
	// RedeemedBy is the ID of the grant created by the first redemption;
	// empty while unused.
	RedeemedBy string `json:"redeemed_by,omitempty"`
}

// Grant is what a user approved for a client, created when a code is
// redeemed. Its refresh tokens and access tokens all point to it.
type Grant struct {
	ID        string   `json:"id"`
	ClientID  string   `json:"client_id"`
	Subject   string   `json:"sub"`
	Scopes    []string `json:"scopes,omitempty"`
	Resources []string `json:"resources,omitempty"`
	// UpstreamTokens is the ID of the upstream tokens bound to this grant
	// ([Config.Vault]); empty when there are none.
	UpstreamTokens string `json:"upstream_tokens,omitempty"`
	// DPoPJKT binds a public client's grant, and so its refresh tokens,
	// to the DPoP key that obtained it (RFC 9449 §5). Empty means unbound.
	DPoPJKT   string    `json:"dpop_jkt,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the grant, and so its refresh token family, ends.
	ExpiresAt time.Time `json:"expires_at"`
	Revoked   bool      `json:"revoked,omitempty"`
}

// RefreshToken is one member of a grant's refresh token family.
type RefreshToken struct {
	// Key is the base64url SHA-256 of the token.
	Key       string    `json:"key"`
	GrantID   string    `json:"grant_id"`
	ClientID  string    `json:"client_id"`
	IssuedAt  time.Time `json:"iat"`
	ExpiresAt time.Time `json:"exp"`
	// Rotated is set once the token was exchanged for its successor; any
	// later use is reuse.
	Rotated bool `json:"rotated,omitempty"`
}

// Consent is a remembered approval.
type Consent struct {
	Subject     string   `json:"sub"`
	ClientID    string   `json:"client_id"`
	RedirectURI string   `json:"redirect_uri"`
	Scopes      []string `json:"scopes,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	// Browsers are the base64url SHA-256 of the remember-consent cookies
	// of the browsers in which the user approved this client and redirect
	// URI on the consent page, oldest first: the consent is applied only
	// in one of them.
	Browsers  []string  `json:"browsers,omitempty"`
	GrantedAt time.Time `json:"granted_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SigningKey is an access token signing key with its schedule: it is
// published from CreatedAt, signs from ActiveAt, stops signing at RetireAt
// (zero: not scheduled) and is removed once tokens it signed have expired.
type SigningKey struct {
	ID        string `json:"kid"`
	Algorithm string `json:"alg"`
	// PrivateJWK is the private key as a JSON Web Key.
	PrivateJWK []byte    `json:"private_jwk"`
	CreatedAt  time.Time `json:"created_at"`
	ActiveAt   time.Time `json:"active_at"`
	RetireAt   time.Time `json:"retire_at,omitzero"`
}

// PendingAuthorization is a validated authorization request waiting at
// one step of the browser login: for the user's decision on the consent
// page, or for the user's return from the login at the identity provider
// ([Config.Login]). It is single-use and bound to the browser.
type PendingAuthorization struct {
	ID string `json:"id"`
	// Step is where the request waits: "consent", the consent page,
	// "choose", the page choosing among several providers
	// ([Config.Logins]), or "login", the login at the provider, whose ID
	// is "upstream." followed by the base64url SHA-256 of the login's
	// "state". A record of another step is never taken.
	Step string `json:"step"`
	// CSRFHash and BrowserHash are the base64url SHA-256 of the consent
	// or choice form's CSRF token (empty for a login) and of the browser's binding
	// cookie (the consent cookie, or the login's); the values themselves
	// are never stored.
	CSRFHash    string `json:"csrf_hash"`
	BrowserHash string `json:"browser_hash"`
	// Client is the client as resolved at the authorization endpoint
	// (registered, dynamic, or from its metadata document), without secret.
	Client          *Client  `json:"client"`
	RedirectURI     string   `json:"redirect_uri"`
	RedirectURISent bool     `json:"redirect_uri_sent"`
	State           string   `json:"state,omitempty"`
	Challenge       string   `json:"code_challenge"`
	Scopes          []string `json:"scopes,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	// Subject is the user when already known: the page follows a login
	// at the provider ([Config.Login] with RememberConsent). Empty
	// otherwise.
	Subject string `json:"sub,omitempty"`
	// UpstreamTokens is the ID of the upstream tokens of the login that
	// preceded the page ([Config.Vault]); empty otherwise.
	UpstreamTokens string `json:"upstream_tokens,omitempty"`
	// Provider is the name of the identity provider the request logs in
	// at ([LoginProvider.Name]) once it is chosen: on the choice page or
	// by the domain of the client's login_hint. A login's record comes
	// back only from that provider's callback. Empty with a single
	// [Config.Login], or before the choice.
	Provider string `json:"provider,omitempty"`
	// LoginHint is the user's email address when it chose Provider (the
	// client's login_hint or the address typed on the choice page), sent
	// to the provider as its login_hint. Empty otherwise.
	LoginHint string `json:"login_hint,omitempty"`
	// Nonce and Verifier are a login's OpenID Connect "nonce" and PKCE
	// code verifier; Consented records that the user approved the request
	// on our consent page before the login.
	Nonce     string `json:"nonce,omitempty"`
	Verifier  string `json:"code_verifier,omitempty"`
	Consented bool   `json:"consented,omitempty"`
	// RememberBrowser is, for a login, the base64url SHA-256 of the
	// browser's remember-consent cookie ([Config.RememberConsent]): of the
	// browser that approved, when Consented, or else of one whose
	// authorization request was a navigation from this server's own site.
	// Empty otherwise: then no remembered consent is recorded or applied.
	RememberBrowser string `json:"remember_browser,omitempty"`
	// DeviceCode is, for a device login ([Config.Device]), the Key of the
	// [DeviceCode] whose user code was entered: the approval goes to it
	// instead of a redirect. Empty otherwise.
	DeviceCode string    `json:"device_code,omitempty"`
	ExpiresAt  time.Time `json:"exp"`
}
