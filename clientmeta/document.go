package clientmeta

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Document is a Client ID Metadata Document
// (draft-ietf-oauth-client-id-metadata-document §4): RFC 7591 client
// metadata plus the client_id it describes. It encodes as one flat JSON
// object.
type Document struct {
	// ClientID is "client_id". REQUIRED; identical, by simple string
	// comparison, to the URL the document is served at.
	ClientID string `json:"client_id"`
	// ClientMetadata holds the RFC 7591 §2 members. MCP requires
	// client_name and redirect_uris; token_endpoint_auth_method,
	// when present, is "none" or "private_key_jwt".
	oauthmeta.ClientMetadata
}

// wireDocument is what ParseDocument decodes: the document plus the members
// that must not be there, so their presence can be detected.
type wireDocument struct {
	Document
	ClientSecret          oauthmeta.RawJSON `json:"client_secret"`
	ClientSecretExpiresAt oauthmeta.RawJSON `json:"client_secret_expires_at"`
}

// maxDocumentEntries bounds the arrays of a document.
const maxDocumentEntries = 32

// ParseDocument decodes a document strictly (one JSON object, names matched
// case-sensitively, duplicate names refused) and then applies
// [Document.Validate] with fetchedFrom, the URL the document came from.
// A "client_secret" or "client_secret_expires_at" member is refused.
// Errors wrap [ErrInvalidDocument].
func ParseDocument(data []byte, fetchedFrom string) (*Document, error) {
	var w wireDocument
	if err := jsonx.DecodeObject(data, &w); err != nil {
		return nil, errRule("not a well-formed JSON object", ErrInvalidDocument)
	}
	if len(w.ClientSecret) > 0 || len(w.ClientSecretExpiresAt) > 0 {
		return nil, errRule("client_secret present", ErrInvalidDocument, ErrSharedSecret)
	}
	doc := w.Document
	if err := doc.Validate(fetchedFrom); err != nil {
		return nil, err
	}
	return &doc, nil
}

// Validate applies the document rules:
//   - client_id is identical to url and a valid client_id URL;
//   - client_name and redirect_uris are present, and every redirect URI is
//     acceptable to [CheckRedirectURI];
//   - token_endpoint_auth_method is absent, "none" or "private_key_jwt"
//     (which needs exactly one of jwks and jwks_uri); never a shared-secret
//     method;
//   - jwks, when present, is a JWK Set of public keys: an object whose
//     "keys" is an array of JWKs, none of which carries private or
//     symmetric key material;
//   - response_types, when present, include "code";
//   - client_uri, logo_uri, tos_uri, policy_uri and jwks_uri, when present,
//     are https URLs.
//
// Which keys of jwks can verify the client's assertions is left to the
// party that verifies them: an authorization server parses the set when the
// client authenticates, by the rule it applies to a fetched jwks_uri.
//
// Errors wrap [ErrInvalidDocument] (and [ErrClientIDMismatch] or
// [ErrSharedSecret] where they apply).
func (d *Document) Validate(url string) error {
	if d.ClientID != url {
		return errRule("client_id", ErrInvalidDocument, ErrClientIDMismatch)
	}
	if err := ValidateClientID(d.ClientID); err != nil {
		return errRule("client_id", ErrInvalidDocument, ErrInvalidClientID)
	}
	if strings.TrimSpace(d.ClientName) == "" {
		return errRule("client_name missing", ErrInvalidDocument)
	}
	if len(d.RedirectURIs) == 0 {
		return errRule("redirect_uris missing", ErrInvalidDocument)
	}
	if len(d.RedirectURIs) > maxDocumentEntries || len(d.GrantTypes) > maxDocumentEntries ||
		len(d.ResponseTypes) > maxDocumentEntries || len(d.Contacts) > maxDocumentEntries {
		return errRule("too many entries", ErrInvalidDocument)
	}
	for _, r := range d.RedirectURIs {
		if err := CheckRedirectURI(r); err != nil {
			return errRule("redirect_uris", ErrInvalidDocument, ErrInvalidRedirectURI)
		}
	}
	if err := d.checkAuthMethod(); err != nil {
		return err
	}
	if err := checkJWKS(d.JWKS); err != nil {
		return err
	}
	if len(d.ResponseTypes) > 0 && !slices.Contains(d.ResponseTypes, "code") {
		return errRule("response_types without code", ErrInvalidDocument)
	}
	strict := oauthmeta.URLPolicy{}
	for _, f := range []struct{ name, value string }{
		{"client_uri", d.ClientURI}, {"logo_uri", d.LogoURI}, {"tos_uri", d.TOSURI},
		{"policy_uri", d.PolicyURI}, {"jwks_uri", d.JWKSURI},
	} {
		if f.value != "" && strict.CheckURL(f.value) != nil {
			return errRule(f.name+" is not an https URL", ErrInvalidDocument)
		}
	}
	return nil
}

// checkJWKS applies the document's rule for an inline "jwks": absent, or a
// JWK Set (RFC 7517 §5) of the client's public keys (RFC 7591 §2). A member
// with private or symmetric key material ("d", "p", "q", "dp", "dq", "qi",
// "oth", "k", or "kty" "oct") is refused, by the rule the module's JWK Set
// parser refuses a whole set with: the document is public, so such a key is
// a leaked secret, and a symmetric one would be a shared secret.
// The members are not parsed into keys here.
func checkJWKS(jwks oauthmeta.RawJSON) error {
	if len(jwks) == 0 || string(jwks) == "null" {
		return nil
	}
	var set struct {
		Keys *[]map[string]any `json:"keys"`
	}
	if jsonx.DecodeObject(jwks, &set) != nil || set.Keys == nil {
		return errRule("jwks is not a JWK Set", ErrInvalidDocument)
	}
	for _, m := range *set.Keys {
		if m == nil {
			return errRule("jwks is not a JWK Set", ErrInvalidDocument)
		}
		if jwa.CheckPublic(m) != nil {
			return errRule("jwks holds a private or symmetric key", ErrInvalidDocument)
		}
	}
	return nil
}

func (d *Document) checkAuthMethod() error {
	switch d.TokenEndpointAuthMethod {
	case "", oauthmeta.AuthMethodNone:
		return nil
	case oauthmeta.AuthMethodPrivateKeyJWT:
		if (d.JWKSURI == "") == (len(d.JWKS) == 0 || string(d.JWKS) == "null") {
			return errRule("private_key_jwt needs exactly one of jwks and jwks_uri", ErrInvalidDocument)
		}
		return nil
	case oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost,
		oauthmeta.AuthMethodClientSecretJWT:
		return errRule("token_endpoint_auth_method", ErrInvalidDocument, ErrSharedSecret)
	default:
		return errRule("unknown token_endpoint_auth_method", ErrInvalidDocument)
	}
}

// AuthMethod returns the token endpoint authentication method the document
// declares, "none" when it declares none.
func (d *Document) AuthMethod() string {
	return cmp.Or(d.TokenEndpointAuthMethod, oauthmeta.AuthMethodNone)
}

// LocalhostOnly reports whether every redirect URI of the document points at
// this machine (a loopback address or "localhost"). Such a client can be
// impersonated by any local program, so a consent screen should warn
// (MCP "Localhost Redirect URI Risks").
func (d *Document) LocalhostOnly() bool { return LocalhostOnly(d.RedirectURIs) }

// LocalhostOnly reports whether redirectURIs is non-empty and every entry is
// an http or https URL whose host is loopback or "localhost".
func LocalhostOnly(redirectURIs []string) bool {
	return len(redirectURIs) > 0 && !slices.ContainsFunc(redirectURIs, func(r string) bool {
		u, err := url.Parse(r)
		return err != nil || (u.Scheme != "http" && u.Scheme != "https") || !oauthmeta.IsLoopbackHost(u.Hostname())
	})
}

// refusedRedirectSchemes can run code or read local data in a browser.
var refusedRedirectSchemes = []string{"javascript", "data", "file", "vbscript", "blob", "about", "filesystem"}

// CheckRedirectURI reports whether raw is an acceptable redirect URI for any
// client: absolute, without fragment or user information, and either https,
// plain http to a loopback host or "localhost" (RFC 8252 §7.3), or a
// private-use scheme (RFC 8252 §7.1). Schemes that run code in a browser
// (javascript:, data:, file:, vbscript:, blob:, about:) are refused. The
// error wraps [ErrInvalidRedirectURI].
func CheckRedirectURI(raw string) error {
	if raw == "" || len(raw) > maxClientIDLength {
		return errRule("empty or too long", ErrInvalidRedirectURI)
	}
	if hasForbiddenChar(raw) {
		return errRule("forbidden character", ErrInvalidRedirectURI)
	}
	if strings.Contains(raw, "#") {
		return errRule("fragment", ErrInvalidRedirectURI)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return errRule("not an absolute URI", ErrInvalidRedirectURI)
	}
	if slices.Contains(refusedRedirectSchemes, u.Scheme) {
		return errRule("scheme", ErrInvalidRedirectURI)
	}
	if u.User != nil {
		return errRule("user information", ErrInvalidRedirectURI)
	}
	switch u.Scheme {
	case "https":
		if u.Hostname() == "" {
			return errRule("no host", ErrInvalidRedirectURI)
		}
	case "http":
		if !oauthmeta.IsLoopbackHost(u.Hostname()) {
			return errRule("plain http to a non-loopback host", ErrInvalidRedirectURI)
		}
	default:
		if u.Opaque == "" && u.Host == "" && u.Path == "" {
			return errRule("empty private-use URI", ErrInvalidRedirectURI)
		}
	}
	return nil
}
