package authserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// ConnectProvider is a third-party service (GitHub, Google, any OAuth 2.0
// or OpenID Connect authorization server) whose accounts users connect at
// this server ([Config.Connect]), so that MCP servers can act there as
// them without the third party's tokens ever reaching an MCP client.
//
// An MCP server (a pre-registered confidential client named in
// [Config.VaultResourceServers]) asks for the user's token at the provider
// with the RFC 8693 token exchange of the user's access token, "audience"
// Name. When the user has connected the provider it gets the provider's
// access token, refreshed when due; otherwise invalid_grant with
// [oauthmeta.Error.ConnectURI], this server's connect page
// (/connect/Name?ref=…), where the user, signed in at [Config.Login] as
// the same user the access token was issued for, confirms and then
// authorizes at the provider.
type ConnectProvider struct {
	// Name names the provider in the connect page's path and as the token
	// exchange's "audience": 1 to 32 lower-case letters, digits, "-" or
	// "_", e.g. "github". Required.
	Name string
	// DisplayName is shown on the connect page, e.g. "GitHub". Empty
	// means Name.
	DisplayName string
	// Login runs the provider's authorization code flow (PKCE S256,
	// state, nonce and RFC 9207 iss where the provider supports them) and
	// redeems the code; package authserver/upstream has OpenID Connect
	// and OAuth 2.0 providers with presets for GitHub and Google. Register
	// [Server.ConnectCallbackURL] at the provider. Its scopes and extra
	// authorization parameters are the access the connection asks for.
	// Required.
	Login Login
	// Vault keeps the provider's tokens, sealed, and refreshes them there
	// (upstream.VaultConfig with this Login as Provider). New calls it
	// once with the server's [UpstreamTokenStore]. Required.
	Vault func(UpstreamTokenStore) (Vault, error)
}

// ConnectRefTTL is how long a connect URI's reference stays usable: the
// user's sign-in, confirmation and authorization at the provider must fit
// in it.
const ConnectRefTTL = 10 * time.Minute

// Paths of the connect pages under the issuer.
const (
	pathConnectPrefix   = "/connect/"
	pathConnectCallback = "/connect/callback"
	pathDisconnect      = "/disconnect"
)

// Prefixes of the [ConnectTicket] IDs, one per kind.
const (
	refTicketPrefix       = "connect-ref."
	loginTicketPrefix     = "connect-login."
	confirmTicketPrefix   = "connect-confirm."
	authorizeTicketPrefix = "connect-authz."
)

// connectName is the syntax of [ConnectProvider.Name].
var connectName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// connectProvider is a validated ConnectProvider with its vault.
type connectProvider struct {
	name, display string
	login         Login
	vault         Vault
}

// connector is the connected accounts of Config.Connect: the providers,
// the store, and the resource servers allowed to ask for their tokens.
type connector struct {
	providers map[string]*connectProvider
	names     []string
	// byIssuer names the provider of each issuer identifier that only one
	// provider has: a target as "audience" or "resource".
	byIssuer map[string]string
	// resources is Config.VaultResourceServers.
	resources map[string]string
	store     ConnectStore
	grants    GrantStore
	issuer    string // without a trailing "/"
	clock     clock.Func
	log       *slog.Logger
}

// openConnect validates Config.Connect and opens each provider's vault on
// the server's store of upstream tokens; nil without providers.
func (s *Server) openConnect() (*connector, error) {
	c := &s.cfg
	if len(c.Connect) == 0 {
		return nil, nil
	}
	switch {
	case c.Login == nil:
		return nil, configErr("Connect", "needs Login: the connect page signs the user in there to check who they are")
	case len(c.VaultResourceServers) == 0:
		return nil, configErr("Connect", "needs VaultResourceServers: the resource servers that may ask for the tokens")
	}
	for id, res := range c.VaultResourceServers {
		if err := s.clients.checkExchanger("VaultResourceServers", id, res); err != nil {
			return nil, err
		}
	}
	cn := &connector{providers: map[string]*connectProvider{}, byIssuer: map[string]string{},
		resources: c.VaultResourceServers, store: s.store.Connect, grants: s.store.Grants,
		issuer: strings.TrimSuffix(c.Issuer, "/"), clock: s.clock, log: s.log}
	issuers := map[string]int{}
	for _, p := range c.Connect {
		field := "Connect[" + p.Name + "]"
		switch {
		case !connectName.MatchString(p.Name) || p.Name == strings.TrimPrefix(pathConnectCallback, pathConnectPrefix):
			return nil, configErr("Connect", fmt.Sprintf("%.40q: a name is 1 to 32 of a-z, 0-9, - and _, and not \"callback\"", p.Name))
		case cn.providers[p.Name] != nil:
			return nil, configErr(field, "the name is used twice")
		case p.Name == c.VaultAudience:
			return nil, configErr(field, "the name is the VaultAudience")
		case p.Login == nil || p.Vault == nil:
			return nil, configErr(field, "needs Login and Vault")
		}
		v, err := p.Vault(s.store.UpstreamTokens)
		if err == nil && v == nil {
			err = configErr(field+".Vault", "returned no vault")
		}
		if err != nil {
			return nil, err
		}
		cn.providers[p.Name] = &connectProvider{name: p.Name, display: cmp.Or(p.DisplayName, p.Name), login: p.Login, vault: v}
		cn.names = append(cn.names, p.Name)
		issuers[p.Login.Issuer()]++
		cn.byIssuer[p.Login.Issuer()] = p.Name
	}
	for iss, n := range issuers {
		if n > 1 {
			delete(cn.byIssuer, iss) // ambiguous: only the names select these
		}
	}
	return cn, nil
}

// mayExchange reports whether the client may ask for connected tokens.
func (c *connector) mayExchange(clientID string) bool {
	if c == nil {
		return false
	}
	_, ok := c.resources[clientID]
	return ok
}

// target returns the provider a token exchange's target names: its Name
// as "audience", or its issuer identifier (when no other provider has it)
// as "audience" or "resource"; nil for none.
func (c *connector) target(t string, asAudience bool) *connectProvider {
	if c == nil {
		return nil
	}
	if p := c.providers[t]; p != nil && asAudience {
		return p
	}
	return c.providers[c.byIssuer[t]]
}

// token returns the user's access token at p, refreshed by p's vault when
// due. [ErrNotFound] means the user has no (live) connection: none was
// made, the grant it was made through ended, or the provider refused the
// refresh; the dead connection is deleted on the way.
func (c *connector) token(ctx context.Context, subject string, p *connectProvider) (*oauth2.Token, error) {
	a, err := c.store.ConnectedAccount(ctx, subject, p.name)
	if err != nil {
		return nil, err
	}
	g, err := c.grants.Grant(ctx, a.GrantID)
	switch {
	case errors.Is(err, ErrNotFound) || err == nil && (g.Revoked || !c.clock.Now().Before(g.ExpiresAt)):
		c.drop(ctx, a)
		return nil, ErrNotFound
	case err != nil:
		return nil, err
	}
	vg := *g
	vg.UpstreamTokens = a.Tokens
	tok, err := p.vault.Token(ctx, &vg, "")
	if errors.Is(err, ErrNotFound) {
		c.drop(ctx, a)
	}
	return tok, err
}

// drop deletes the account a and its tokens, logging a failure (both are
// swept when the grant expires anyway).
func (c *connector) drop(ctx context.Context, a *ConnectedAccount) {
	if err := c.store.DeleteConnectedAccount(ctx, a); err != nil {
		c.log.WarnContext(ctx, "deleting a connected account failed", "provider", a.Provider, "err", err)
	}
	if p := c.providers[a.Provider]; p != nil {
		p.vault.Drop(ctx, a.Tokens)
	}
}

// dropGrant deletes the accounts connected through the grant grantID,
// which has ended (revoked, or its refresh token reused).
func (c *connector) dropGrant(ctx context.Context, grantID string) {
	if c == nil {
		return
	}
	accounts, err := c.store.ConnectedAccountsOfGrant(ctx, grantID)
	if err != nil {
		c.log.WarnContext(ctx, "listing the connected accounts of a revoked grant failed", "err", err)
		return
	}
	for _, a := range accounts {
		c.drop(ctx, a)
		c.log.InfoContext(ctx, "connected account deleted with its grant", "provider", a.Provider, "sub", a.Subject)
	}
}

// notConnected makes the single-use reference for a connection of the
// grant g's user at p, asked for by the resource server caller, and
// returns the invalid_grant error carrying its connect URI.
func (c *connector) notConnected(ctx context.Context, caller string, g *Grant, p *connectProvider) error {
	ref := randomToken(32)
	now := c.clock.Now()
	err := c.store.SaveConnectTicket(ctx, &ConnectTicket{
		ID: refTicketPrefix + tokenKey(ref), Kind: TicketRef, Provider: p.name, Subject: g.Subject,
		Caller: caller, ClientID: g.ClientID, GrantID: g.ID, ExpiresAt: now.Add(ConnectRefTTL),
	})
	if err != nil {
		return err
	}
	c.log.InfoContext(ctx, "connect reference issued", "provider", p.name, "client_id", g.ClientID, "caller", caller, "sub", g.Subject)
	return &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant,
		Description: "the user has not connected " + p.name + "; send them to connect_uri",
		ConnectURI:  c.issuer + pathConnectPrefix + p.name + "?ref=" + ref}
}

// disconnect deletes the user's account at the provider; a missing one
// is no error.
func (c *connector) disconnect(ctx context.Context, subject, provider string) error {
	if c == nil || c.providers[provider] == nil {
		return fmt.Errorf("%w: no connect provider %.40q", ErrNotFound, provider)
	}
	a, err := c.store.ConnectedAccount(ctx, subject, provider)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c.drop(ctx, a)
	c.log.InfoContext(ctx, "connected account disconnected", "provider", provider, "sub", subject)
	return nil
}

// Disconnect deletes the user subject's connected account at the
// [ConnectProvider] named provider and its tokens; one that does not
// exist is no error. An unknown provider matches [ErrNotFound]. Users
// disconnect themselves at /connect/NAME/disconnect.
func (s *Server) Disconnect(ctx context.Context, subject, provider string) error {
	return s.connect.disconnect(ctx, subject, provider)
}

// ConnectProviders returns the names of the [Config.Connect] providers,
// in configuration order.
func (s *Server) ConnectProviders() []string {
	if s.connect == nil {
		return nil
	}
	return slices.Clone(s.connect.names)
}

// ConnectCallbackURL is the redirect URI to register at every
// [ConnectProvider]: the issuer followed by /connect/callback.
func (s *Server) ConnectCallbackURL() string {
	return strings.TrimSuffix(s.cfg.Issuer, "/") + pathConnectCallback
}

// keep seals the tokens of a finished connection into p's vault, bound
// to the grant g through which the user connected (so they live as long
// as it), and records the account in place of an earlier one, whose
// tokens it drops.
func (c *connector) keep(ctx context.Context, p *connectProvider, g *Grant, tok *oauth2.Token) error {
	id, err := p.vault.Keep(ctx, p.login.Issuer(), tok, g.ExpiresAt)
	if err != nil {
		return err
	}
	if err := p.vault.Bind(ctx, id, g); err != nil {
		p.vault.Drop(ctx, id)
		return err
	}
	old, err := c.store.ConnectedAccount(ctx, g.Subject, p.name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		p.vault.Drop(ctx, id)
		return err
	}
	err = c.store.SaveConnectedAccount(ctx, &ConnectedAccount{Subject: g.Subject, Provider: p.name, Tokens: id,
		GrantID: g.ID, ClientID: g.ClientID, ConnectedAt: c.clock.Now(), ExpiresAt: g.ExpiresAt})
	if err != nil {
		p.vault.Drop(ctx, id)
		return err
	}
	if old != nil && old.Tokens != id {
		p.vault.Drop(ctx, old.Tokens)
	}
	return nil
}
