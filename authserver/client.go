package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// ClientKind says where a client's registration comes from.
type ClientKind string

// Client kinds.
const (
	// ClientStatic: pre-registered through [Config.Clients].
	ClientStatic ClientKind = "static"
	// ClientDynamic: registered through Dynamic Client Registration
	// (RFC 7591).
	ClientDynamic ClientKind = "dynamic"
	// ClientMetadataDocument: the client_id is a Client ID Metadata
	// Document URL, resolved on use and never stored.
	ClientMetadataDocument ClientKind = "metadata-document"
)

// Client is a registered OAuth client. Stores keep it as JSON; it holds a
// hash of the secret, never the secret itself.
type Client struct {
	// ID is the client_id.
	ID string `json:"client_id"`
	// Secret is the plain client secret, accepted only in
	// [Config.Clients]: New hashes it into SecretHash and drops it. It is
	// never stored, logged or returned.
	Secret string `json:"-"`
	// SecretHash is the hex SHA-256 of the secret. Empty for public
	// clients.
	SecretHash string `json:"secret_hash,omitempty"`
	// Name is the client_name shown on the consent page. Empty means the
	// client_id is shown instead.
	Name string `json:"client_name,omitempty"`
	// RedirectURIs are matched exactly, with only the loopback-port
	// exemption (requirement AS-05).
	RedirectURIs []string `json:"redirect_uris"`
	// AuthMethod is the token endpoint authentication method: "none",
	// "client_secret_basic", "client_secret_post" or "private_key_jwt"
	// (RFC 7523, with JWKS or JWKSURI). Empty in [Config.Clients] means
	// "private_key_jwt" with keys, "client_secret_basic" with a secret and
	// "none" otherwise.
	AuthMethod string `json:"token_endpoint_auth_method"`
	// GrantTypes lists the grants the client may use: authorization_code,
	// refresh_token, client_credentials (confidential clients only),
	// urn:ietf:params:oauth:grant-type:jwt-bearer and
	// urn:ietf:params:oauth:grant-type:token-exchange (with
	// IdentityProvider) and urn:ietf:params:oauth:grant-type:device_code
	// (with [Config.Device]). Empty in [Config.Clients] means authorization_code
	// and refresh_token.
	GrantTypes []string `json:"grant_types"`
	// AllowedScopes, when not empty, is a ceiling: a request for a scope
	// outside it gets invalid_scope "scope not allowed for this client",
	// even when the scope is in [Config.Scopes]. It is for pre-registered
	// clients ([Config.Clients]), whose scopes an administrator chose; each
	// must be in Config.Scopes. Clients registered through Dynamic Client
	// Registration or described by a Client ID Metadata Document never have
	// one: their registered "scope" becomes DefaultScopes, so they can step
	// up later. Empty means any of Config.Scopes.
	AllowedScopes []string `json:"allowed_scopes,omitempty"`
	// DefaultScopes are granted when a request from this client names no
	// scope, within AllowedScopes. They are never a ceiling. For a client
	// registered through Dynamic Client Registration or a Client ID
	// Metadata Document they are its registered "scope" (RFC 7591 §2) less
	// anything outside Config.Scopes. Each must be in Config.Scopes (and
	// AllowedScopes when set). Empty means [Config.DefaultScopes].
	DefaultScopes []string `json:"scopes,omitempty"`
	// JWKS is the client's JWK set (RFC 7591 §2 "jwks"), for
	// private_key_jwt. At most one of JWKS and JWKSURI.
	JWKS json.RawMessage `json:"jwks,omitempty"`
	// JWKSURI is where the client's JWK set is fetched (RFC 7591 §2
	// "jwks_uri"), for private_key_jwt.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ApplicationType is "web" or "native" (OpenID Connect Registration
	// §2), informational for static clients.
	ApplicationType string `json:"application_type,omitempty"`
	// Kind says where the registration comes from.
	Kind ClientKind `json:"kind"`
	// CreatedAt is when the client was registered.
	CreatedAt time.Time `json:"created_at"`
}

// public reports whether the client has no credentials.
func (c *Client) public() bool { return c.AuthMethod == oauthmeta.AuthMethodNone }

// usesKeys reports whether the client authenticates with private_key_jwt.
func (c *Client) usesKeys() bool { return c.AuthMethod == oauthmeta.AuthMethodPrivateKeyJWT }

// allowsScope reports whether the client's ceiling, if it has one, lets
// it obtain scope sc.
func (c *Client) allowsScope(sc string) bool {
	return len(c.AllowedScopes) == 0 || slices.Contains(c.AllowedScopes, sc)
}

// allowsGrant reports whether the client may use grant type gt.
func (c *Client) allowsGrant(gt string) bool { return slices.Contains(c.GrantTypes, gt) }

// checkSecret compares secret with the stored hash in constant time.
func (c *Client) checkSecret(secret string) bool {
	if c.SecretHash == "" || secret == "" {
		return false
	}
	sum := sha256.Sum256([]byte(secret))
	want, err := hex.DecodeString(c.SecretHash)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(sum[:], want) == 1
}

// hashSecret returns the stored form of a client secret.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// errUnknownClient is the reason for a client_id nobody registered.
var errUnknownClient = oauthErr(oauthmeta.CodeInvalidClient, "unknown client")

// clientRegistry finds and authenticates clients: the pre-registered ones
// from the configuration, the dynamically registered ones in the client
// store, and URL client_ids through the Client ID Metadata Document
// resolver. It is safe for concurrent use.
type clientRegistry struct {
	// static are the pre-registered clients: every replica has them, so
	// their lookups need no store read.
	static map[string]*Client
	store  ClientStore
	cimd   *clientmeta.Resolver // nil when metadata documents are off
	scopes *scopePolicy         // a document's scope becomes its defaults
	// assertions checks private_key_jwt client assertions against the
	// client's keys, from keySets for a jwks_uri.
	assertions *jwtassert.ClientAssertionVerifier
	keySets    *remoteKeySets
	log        *slog.Logger
}

// preRegister validates, hashes and stores the pre-registered clients.
func (c *clientRegistry) preRegister(ctx context.Context, clients []Client, now time.Time) error {
	c.static = make(map[string]*Client, len(clients))
	for i := range clients {
		cl, err := staticClient(&clients[i], c.scopes.supported, now)
		if err != nil {
			return err
		}
		if err := c.store.SaveClient(ctx, cl); err != nil {
			return err
		}
		c.static[cl.ID] = cl
	}
	return nil
}

// clientMetadataResolver returns the resolver of URL client_ids: nil when
// they are off, else the configured one or one with strict defaults.
func clientMetadataResolver(cfg *settings) (*clientmeta.Resolver, error) {
	switch {
	case cfg.DisableClientIDMetadataDocuments:
		return nil, nil
	case cfg.ClientMetadata != nil:
		return cfg.ClientMetadata, nil
	}
	return clientmeta.NewResolver(clientmeta.ResolverConfig{Now: cfg.Now})
}

// lookup finds a client: URL client_ids through the Client ID Metadata
// Document resolver (when enabled), pre-registered ones from the
// configuration, others in the client store.
// The error is a *oauthmeta.Error with code invalid_client for clients that
// do not exist or whose document is unusable, or an internal error.
func (c *clientRegistry) lookup(ctx context.Context, id string) (*Client, error) {
	if id == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "client_id is required")
	}
	if clientmeta.IsURLClientID(id) {
		if c.cimd == nil {
			return nil, oauthErr(oauthmeta.CodeInvalidClient, "client ID metadata documents are not supported")
		}
		doc, err := c.cimd.Resolve(ctx, id)
		if err != nil {
			c.log.InfoContext(ctx, "client metadata document refused", "client_id", id, "err", err)
			return nil, oauthErr(oauthmeta.CodeInvalidClient, cimdErrorDescription(err))
		}
		return c.fromDocument(doc)
	}
	if cl, ok := c.static[id]; ok {
		return cloneClient(cl), nil
	}
	cl, err := c.store.Client(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, errUnknownClient
	}
	return cl, err
}

// unregistered reports whether the client store has no client id (a
// URL client_id is never stored); a failed read is not a "no".
func (c *clientRegistry) unregistered(ctx context.Context, id string) bool {
	if clientmeta.IsURLClientID(id) {
		return false
	}
	_, err := c.store.Client(ctx, id)
	return errors.Is(err, ErrNotFound)
}

// checkExchanger checks a client that configuration names as the resource
// server of resource res for the token exchange: a pre-registered
// confidential client allowed the grant, with a valid resource URI.
func (c *clientRegistry) checkExchanger(field, id, res string) error {
	cl, ok := c.static[id]
	switch {
	case !ok || cl.public():
		return configErr(field, "each must be a pre-registered confidential client")
	case !cl.allowsGrant(oauthmeta.GrantTypeTokenExchange):
		return configErr(field, "each client must be allowed the token exchange grant")
	case checkResourceSyntax(res) != nil:
		return configErr(field, "each resource must be an absolute http(s) URI without fragment")
	}
	return nil
}

// cimdErrorDescription says which rule a document broke, without echoing
// anything from the document.
func cimdErrorDescription(err error) string {
	switch {
	case errors.Is(err, clientmeta.ErrInvalidClientID):
		return "client_id is not a valid client metadata document URL"
	case errors.Is(err, clientmeta.ErrUntrusted):
		return "client_id host is not trusted by this server"
	case errors.Is(err, clientmeta.ErrFetch):
		return "client metadata document could not be fetched"
	case errors.Is(err, clientmeta.ErrClientIDMismatch):
		return "client metadata document client_id does not match its URL"
	case errors.Is(err, clientmeta.ErrSharedSecret):
		return "client metadata document declares a shared secret"
	default:
		return "client metadata document is invalid"
	}
}

// fromDocument turns a validated metadata document into a client:
// public ("none"), or private_key_jwt with the document's jwks or jwks_uri
// (requirements CIMD-03, CIMD-09).
func (c *clientRegistry) fromDocument(doc *clientmeta.Document) (*Client, error) {
	method := doc.AuthMethod()
	if method != oauthmeta.AuthMethodNone && method != oauthmeta.AuthMethodPrivateKeyJWT {
		return nil, oauthErr(oauthmeta.CodeInvalidClient, "token_endpoint_auth_method "+method+" is not supported")
	}
	// The document rule refuses private and symmetric keys but leaves the
	// keys unparsed; they are judged here by the rule every JWK Set gets,
	// so a document without a usable key is refused before anyone is asked
	// to consent (and keySource parses them again to authenticate).
	if len(doc.JWKS) > 0 && string(doc.JWKS) != "null" {
		if _, err := jwkset.Parse(doc.JWKS); err != nil {
			return nil, oauthErr(oauthmeta.CodeInvalidClient, "client metadata document is invalid")
		}
	}
	grants := doc.GrantTypes
	if len(grants) == 0 {
		grants = []string{oauthmeta.GrantTypeAuthorizationCode}
	}
	cl := &Client{
		ID:           doc.ClientID,
		Name:         doc.ClientName,
		RedirectURIs: doc.RedirectURIs,
		AuthMethod:   method,
		GrantTypes:   grants,
		Kind:         ClientMetadataDocument,
	}
	scopes, err := c.scopes.registered(doc.Scope)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidClient, "client metadata document scope is malformed")
	}
	cl.DefaultScopes = scopes
	if method == oauthmeta.AuthMethodPrivateKeyJWT {
		cl.JWKS, cl.JWKSURI = json.RawMessage(doc.JWKS), doc.JWKSURI
	}
	return cl, nil
}

// metadataDocumentClient is how the revocation and introspection endpoints
// (and the token endpoint for a client that presents a secret, which is
// then refused) see a URL client_id: a public client with the standard
// grants. The token endpoint resolves the document (through the cache) for
// auth methods none and private_key_jwt, so a private_key_jwt client cannot
// pass as public (requirement CIMD-09).
func metadataDocumentClient(id string) *Client {
	return &Client{
		ID:         id,
		AuthMethod: oauthmeta.AuthMethodNone,
		GrantTypes: []string{oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken},
		Kind:       ClientMetadataDocument,
	}
}
