package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults and limits of a plain OAuth 2.0 provider ([OAuth2Endpoints]).
const (
	// DefaultIDField is the user-info member read as the user's
	// identifier when [OAuth2Endpoints.IDField] is empty.
	DefaultIDField = "id"
	// maxUserInfoBytes caps the user-info and emails answers.
	maxUserInfoBytes = 64 << 10
	// maxEmails bounds the entries read from the emails endpoint.
	maxEmails = 100
)

// OAuth2Endpoints describe a provider that speaks plain OAuth 2.0 instead
// of OpenID Connect, as GitHub does: no discovery, no ID token. The login
// is the same authorization code flow with PKCE S256 and a single-use,
// browser-bound "state"; the user is then read from UserInfoEndpoint with
// the access token the token endpoint returned, and is identified by
// ([Config.Issuer], the IDField member as a string).
//
// The access token is sent only to the origin of UserInfoEndpoint (and
// EmailsEndpoint, which must share it), as "Authorization: Bearer", and
// never across a redirect: a redirect from either endpoint fails the login.
// Both answers are read up to 64 KiB, within [Config.Timeout], and
// decoded by the module's strict JSON rules.
type OAuth2Endpoints struct {
	// AuthorizationEndpoint and TokenEndpoint are the provider's OAuth 2.0
	// endpoints. Required. The token endpoint is asked for JSON (Accept:
	// application/json), as GitHub requires.
	AuthorizationEndpoint, TokenEndpoint string
	// TokenEndpointAuthMethod is how a ClientSecret is sent:
	// client_secret_basic (empty means this) or client_secret_post. With
	// ClientKey it is private_key_jwt, whose assertion has the token endpoint
	// as "aud" (RFC 7523 §3).
	TokenEndpointAuthMethod string
	// UserInfoEndpoint answers a JSON object describing the user the access
	// token belongs to (GitHub: https://api.github.com/user). Required.
	UserInfoEndpoint string
	// EmailsEndpoint, when set, answers a JSON array of
	// {"email", "primary", "verified"} objects (GitHub:
	// https://api.github.com/user/emails): the primary entry is then the
	// user's email, verified when its "verified" is true. It must have the
	// origin of UserInfoEndpoint. A 403 or 404 from it (the user did not
	// grant the scope) leaves the user without a verified email. Empty means
	// the email is the user-info's EmailField member, which is never
	// verified unless EmailVerifiedField says so: allow-list and grant
	// policy rules by email then match it only with
	// [authserver.AllowList.InsecureAllowUnverifiedEmail].
	EmailsEndpoint string
	// IDField is the user-info member holding the user's stable identifier,
	// a string or an integer (GitHub's numeric "id", not the "login" a user
	// can change and another user can then take). Empty means
	// [DefaultIDField].
	IDField string
	// NameField and EmailField are the user-info members holding a display
	// name and an email. Empty means "name" and "email".
	NameField, EmailField string
	// EmailVerifiedField is a user-info member that is true when the
	// provider verified EmailField. Empty means there is none.
	EmailVerifiedField string
	// GitHubAllow, when set, admits only the members of these GitHub
	// organisations or teams, and adds read:org to the scopes requested.
	// Nil means no membership rule.
	GitHubAllow *GitHubAllow
}

// errUserInfo is wrapped by every refusal of a user-info answer.
var errUserInfo = errors.New("upstream user-info refused")

// checkOAuth2 validates a plain OAuth 2.0 provider and fills its defaults.
func checkOAuth2(p *OAuth2Endpoints, f *safehttp.Fetcher) error {
	p.IDField = cmp.Or(p.IDField, DefaultIDField)
	p.NameField = cmp.Or(p.NameField, "name")
	p.EmailField = cmp.Or(p.EmailField, "email")
	switch p.TokenEndpointAuthMethod {
	case "", oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost:
	default:
		return configErr("Upstream.OAuth2.TokenEndpointAuthMethod", "must be client_secret_basic or client_secret_post")
	}
	for name, v := range map[string]string{
		"AuthorizationEndpoint": p.AuthorizationEndpoint, "TokenEndpoint": p.TokenEndpoint,
		"UserInfoEndpoint": p.UserInfoEndpoint, "EmailsEndpoint": p.EmailsEndpoint,
	} {
		if v == "" && name == "EmailsEndpoint" {
			continue
		}
		if v == "" || f.CheckURL(v) != nil {
			return configErr("Upstream.OAuth2."+name, "must be an https URL (http only to loopback with InsecureAllowHTTPLoopback)")
		}
	}
	if p.GitHubAllow != nil {
		if err := p.GitHubAllow.check(); err != nil {
			return err
		}
		p.GitHubAllow = &GitHubAllow{Orgs: slices.Clone(p.GitHubAllow.Orgs), Teams: slices.Clone(p.GitHubAllow.Teams)}
	}
	if p.EmailsEndpoint != "" {
		a, _ := url.Parse(p.UserInfoEndpoint)
		b, _ := url.Parse(p.EmailsEndpoint)
		if !safehttp.SameOrigin(a, b) {
			return configErr("Upstream.OAuth2.EmailsEndpoint", "must have the origin of UserInfoEndpoint: the access token goes to that origin only")
		}
	}
	return nil
}

// oauth2Provider is the login at a plain OAuth 2.0 provider: its fixed
// metadata, and the user-info fetcher (64 KiB cap, no redirects).
type oauth2Provider struct {
	*client
	endpoints       *OAuth2Endpoints
	meta            *oauthmeta.AuthServerMetadata
	userInfoFetcher *safehttp.Fetcher
	// membersFetcher reads GitHub's membership pages (1 MiB cap, no
	// redirects); nil without GitHubAllow.
	membersFetcher *safehttp.Fetcher
}

// newOAuth2 validates the plain OAuth 2.0 provider and sets up what its
// logins use: the fixed metadata, the token endpoint's client asking for
// JSON, and the user-info fetcher (opts with a 64 KiB cap; no redirects).
func newOAuth2(c *client, opts safehttp.Options) (*oauth2Provider, error) {
	p := *c.cfg.OAuth2
	if err := checkOAuth2(&p, c.fetcher); err != nil {
		return nil, err
	}
	c.cfg.OAuth2 = &p
	hc := *c.fetcher.Client()
	hc.Transport = acceptJSONTransport{base: hc.Transport}
	c.tokenClient = &hc
	u := &oauth2Provider{client: c, endpoints: &p, meta: oauth2Metadata(c.cfg.Issuer, &p)}
	if p.GitHubAllow != nil {
		u.membersFetcher = safehttp.New(membersFetcherOptions(opts))
	}
	opts.MaxBytes, opts.MaxRedirects = maxUserInfoBytes, 0
	u.userInfoFetcher = safehttp.New(opts)
	return u, nil
}

// Issuer implements [authserver.Login]: the configured name of the
// provider.
func (u *oauth2Provider) Issuer() string { return u.cfg.Issuer }

// AuthorizationEndpoint implements [authserver.Login].
func (u *oauth2Provider) AuthorizationEndpoint(ctx context.Context) (string, error) {
	return u.authorizationEndpoint(ctx, u)
}

// Start implements [authserver.Login]: the authorization request carries
// the PKCE challenge.
func (u *oauth2Provider) Start(ctx context.Context, l *authserver.LoginRequest) (string, error) {
	return u.start(ctx, u, l)
}

// Callback implements [authserver.Login]: it exchanges the code with the
// PKCE verifier and reads the user from the user-info endpoint.
func (u *oauth2Provider) Callback(ctx context.Context, q url.Values, l *authserver.LoginRequest) (*authserver.UpstreamIdentity, *oauth2.Token, error) {
	return u.callback(ctx, u, q, l)
}

// Close implements [Provider]; a plain OAuth 2.0 provider has no
// background work.
func (u *oauth2Provider) Close() error { return nil }

// Ready implements [authserver.Readier]: a plain OAuth 2.0 provider's
// endpoints are configured and it has no key set, so it is always ready.
func (u *oauth2Provider) Ready(context.Context) error { return nil }

func (u *oauth2Provider) refresh(ctx context.Context, refreshToken string) (*vaultedToken, error) {
	return u.refreshAt(ctx, u, refreshToken)
}

func (u *oauth2Provider) metadata(context.Context) (*oauthmeta.AuthServerMetadata, error) {
	return u.meta, nil
}

func (u *oauth2Provider) authParams(*authserver.LoginRequest) []oauth2.AuthCodeOption { return nil }

// assertionAudience is the token endpoint: a plain OAuth 2.0 provider has
// no issuer identifier of its own (RFC 7523 §3).
func (u *oauth2Provider) assertionAudience(m *oauthmeta.AuthServerMetadata) string {
	return m.TokenEndpoint
}

// oauth2Metadata is the provider metadata of a plain OAuth 2.0 provider,
// from its configuration: what discovery would give for OpenID Connect.
func oauth2Metadata(issuer string, p *OAuth2Endpoints) *oauthmeta.AuthServerMetadata {
	m := &oauthmeta.AuthServerMetadata{
		Issuer: issuer, AuthorizationEndpoint: p.AuthorizationEndpoint, TokenEndpoint: p.TokenEndpoint,
	}
	if p.TokenEndpointAuthMethod != "" {
		m.TokenEndpointAuthMethodsSupported = []string{p.TokenEndpointAuthMethod}
	}
	return m
}

// acceptJSONTransport asks for JSON: GitHub's token endpoint answers a
// form-encoded body otherwise. The caller's request is not modified.
type acceptJSONTransport struct{ base http.RoundTripper }

func (t acceptJSONTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/json")
	return t.base.RoundTrip(r)
}

// identity is the user-info answer for the access token.
func (u *oauth2Provider) identity(ctx context.Context, tok *oauth2.Token, _ string) (*authserver.UpstreamIdentity, error) {
	if tt := tok.TokenType; tt != "" && !ascii.EqualFold(tt, "bearer") {
		return nil, fmt.Errorf("%w: token_type %.20q is not Bearer", errUserInfo, tt)
	}
	id, err := u.userInfo(ctx, tok.AccessToken)
	if err != nil || u.endpoints.GitHubAllow == nil {
		return id, err
	}
	if err := u.githubMembers(ctx, tok, id); err != nil {
		return nil, err
	}
	return id, nil
}

// userInfo reads the user from the user-info endpoint and, when
// configured, their primary email from the emails endpoint.
func (u *oauth2Provider) userInfo(ctx context.Context, accessToken string) (*authserver.UpstreamIdentity, error) {
	p := u.endpoints
	auth := http.Header{"Authorization": {"Bearer " + accessToken}}
	resp, err := u.userInfoFetcher.GetWithHeader(ctx, p.UserInfoEndpoint, "application/json", auth)
	if err != nil {
		return nil, classifyFetch("user-info", err)
	}
	id, err := u.parseUserInfo(resp.Body)
	if err != nil {
		return nil, err
	}
	if p.EmailsEndpoint != "" {
		if err := u.primaryEmail(ctx, auth, id); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// parseUserInfo reads the user from a user-info answer, a JSON object.
func (u *oauth2Provider) parseUserInfo(body []byte) (*authserver.UpstreamIdentity, error) {
	p := u.endpoints
	var members map[string]jsontext.Value
	if err := jsonx.DecodeObject(body, &members); err != nil {
		return nil, fmt.Errorf("%w: %w", errUserInfo, err)
	}
	id := &authserver.UpstreamIdentity{Issuer: u.cfg.Issuer}
	var err error
	if id.Subject, err = userID(members[p.IDField]); err != nil {
		return nil, fmt.Errorf("%w: member %.40q: %w", errUserInfo, p.IDField, err)
	}
	id.Name = stringMember(members[p.NameField])
	id.Email = stringMember(members[p.EmailField])
	if p.EmailVerifiedField != "" {
		v := members[p.EmailVerifiedField]
		id.EmailVerified = string(v) == "true" || stringMember(v) == "true"
	}
	var groups any
	if v, ok := members[u.cfg.GroupsClaim]; ok && jsonv2.Unmarshal(v, &groups) == nil {
		id.Groups = stringList(groups)
	}
	return id, nil
}

// emailEntry is one entry of the emails endpoint's answer.
type emailEntry struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

// primaryEmail sets id's email to the primary entry of the emails
// endpoint, verified as that entry says.
func (u *oauth2Provider) primaryEmail(ctx context.Context, auth http.Header, id *authserver.UpstreamIdentity) error {
	id.Email, id.EmailVerified = "", false
	resp, err := u.userInfoFetcher.GetWithHeader(ctx, u.endpoints.EmailsEndpoint, "application/json", auth)
	if se, ok := errors.AsType[*safehttp.StatusError](err); ok && (se.StatusCode == http.StatusForbidden || se.StatusCode == http.StatusNotFound) {
		return nil // no access to the emails: no verified email
	}
	if err != nil {
		return classifyFetch("emails", err)
	}
	var entries []emailEntry
	if err := jsonx.DecodeArray(resp.Body, &entries); err != nil {
		return fmt.Errorf("%w: emails: %w", errUserInfo, err)
	}
	if len(entries) > maxEmails {
		return fmt.Errorf("%w: emails: more than %d entries", errUserInfo, maxEmails)
	}
	for _, e := range entries {
		if e.Primary {
			id.Email, id.EmailVerified = e.Email, e.Verified
			return nil
		}
	}
	return nil
}

// classifyFetch sorts a failed fetch: the provider being down, slow or
// failing (5xx) is errUnavailable, anything else a refusal.
func classifyFetch(what string, err error) error {
	var se *safehttp.StatusError
	switch {
	case errors.As(err, &se) && se.StatusCode >= http.StatusInternalServerError,
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %s: %w", errUnavailable, what, err)
	case errors.As(err, &se), errors.Is(err, safehttp.ErrTooLarge), errors.Is(err, safehttp.ErrContentType),
		errors.Is(err, safehttp.ErrRedirect):
		return fmt.Errorf("%w: %s: %w", errUserInfo, what, err)
	}
	return fmt.Errorf("%w: %s: %w", errUnavailable, what, err)
}

// userID reads an identifier member: a non-empty string, or an integer
// written in decimal (GitHub's ids), kept as its literal text.
func userID(v jsontext.Value) (string, error) {
	var s string
	switch v.Kind() {
	case '"':
		if err := jsonv2.Unmarshal(v, &s); err != nil {
			return "", err
		}
	case '0':
		s = string(v)
		for i, c := range s {
			if (c < '0' || c > '9') && !(i == 0 && c == '-' && len(s) > 1) {
				return "", errors.New("not an integer")
			}
		}
	case 0:
		return "", errors.New("missing")
	default:
		return "", errors.New("neither a string nor an integer")
	}
	if s == "" || len(s) > maxSubjectLen {
		return "", errors.New("empty or too long")
	}
	return s, nil
}

// stringMember reads a string member; anything else is "".
func stringMember(v jsontext.Value) string {
	var s string
	if v.Kind() != '"' || jsonv2.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}
