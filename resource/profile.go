package resource

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

// Profile says how one issuer's JWT access tokens are shaped when they do
// not follow RFC 9068: the "typ" header values it sets, the audiences
// that name this resource besides its URI, the claims that carry scopes
// and the client, the claim values its access tokens always carry, and the
// tenants and clients accepted. The zero value is RFC 9068 exactly: typ
// at+jwt, the resource (or an entry of [Config.AudienceAliases]) in "aud",
// the scopes in the string claim "scope", the client in "client_id"
// (optional).
//
// Preset names a provider's documented shape ([Presets] lists them; the
// README's "Using your identity provider" has the source of every fact).
// A field set beside a preset replaces the preset's value of that field;
// RequiredClaims replace the preset's requirement for the same claim and
// add to the others, so an override can change a required value but never
// drop a requirement silently. No preset turns on
// InsecureAcceptMissingAudience.
//
// Profiles apply to JWT access tokens; introspection responses are read by
// RFC 7662 whatever the issuer's profile.
type Profile struct {
	// Preset is "" (RFC 9068) or one of [Presets]: "entra", "entra-v1",
	// "okta", "auth0", "keycloak", "cognito", "hydra".
	Preset string
	// Types are the accepted "typ" header values, each "at+jwt", "JWT"
	// (compared as RFC 7515 §4.1.9 says, so "application/jwt" too) or
	// "none" (a header without "typ"). Nil means the preset's, or at+jwt
	// alone. Every type but at+jwt weakens the defence against other JWTs
	// of the same issuer (RFC 8725 §3.11): the presets that need one pair
	// it with a claim that tells their access tokens apart.
	Types []string
	// Audiences are further "aud" values that name this resource for
	// tokens of this issuer, compared byte for byte (they need not be
	// URLs): an Entra API's application (client) ID or App ID URI, an
	// Auth0 or Okta API identifier. Nil means only the resource and
	// [Config.AudienceAliases].
	Audiences []string
	// ScopeClaims are the claims whose values are the token's scopes, in
	// order, each a claim path written as a name ("scp"), a dotted
	// path ("realm_access.roles") or a JSON Pointer
	// ("/resource_access/my.app/roles"). Each claim may be a space-separated
	// string or an array of strings; every value must be an RFC 6749
	// scope-token, or the token is refused. The scopes of all claims go
	// into [TokenInfo].Scopes, duplicates dropped, and the [Policy] judges
	// them. Nil means the preset's, or "scope" (a string, as RFC 9068 has it).
	ScopeClaims []string
	// ClientClaim is the claim naming the client the token was issued to
	// ("client_id", "azp", "cid", "appid"), read into [TokenInfo].ClientID.
	// A profile's client claim must be present in every token: a preset's
	// is in each of the provider's access tokens and absent from its ID
	// tokens. Empty means the preset's, or "client_id" and optional.
	ClientClaim string
	// RequiredClaims are claims every access token of this issuer carries
	// with one of the listed string values, such as Cognito's token_use
	// "access"; a token without one is refused. Nil means the preset's.
	RequiredClaims []RequiredClaim
	// TenantIDs are the accepted values of "tid" (Entra tenant IDs: GUIDs
	// in lower case; "common", "organizations" and "consumers" are not
	// tenants). When set, a token must carry one of them. An issuer whose
	// identifier holds the placeholder {tid}, such as
	// "https://login.microsoftonline.com/{tid}/v2.0", stands for one issuer
	// per tenant here, each listed in the metadata, with its own keys (from
	// that tenant's metadata, unless [Issuer].JWKSURI or Keys is set), and a
	// token must name in "iss" the template filled with its own "tid". At
	// most [MaxTenants]. There is no "any tenant".
	TenantIDs []string
	// ClientIDs are the accepted values of the client claim. When set, a
	// token must name one of them. Nil means any client.
	ClientIDs []string
	// InsecureAcceptMissingAudience accepts tokens of this issuer that have
	// no "aud" at all (Keycloak without an audience mapper, Cognito access
	// tokens), bound instead to ClientIDs, which it requires: a token is
	// then accepted for any resource that trusts this issuer and these
	// clients, so give this resource clients of its own. A token whose
	// "aud" names someone else stays refused. False refuses tokens without
	// an audience for this resource.
	InsecureAcceptMissingAudience bool
}

// RequiredClaim is a claim an issuer's access tokens always carry with one
// of Values, compared byte for byte; the claim must be a JSON string.
type RequiredClaim struct {
	// Claim is a claim path, written as in [Profile].ScopeClaims.
	Claim string
	// Values are the accepted values; at least one.
	Values []string
}

// Limits of a [Profile].
const (
	MaxTenants   = 64
	MaxClientIDs = 1000
)

// Token types a [Profile] names in Types.
const (
	TypeAccessToken = "at+jwt"
	TypeJWT         = "JWT"
	TypeNone        = "none"
)

// tenantPlaceholder in an issuer identifier stands for each of
// Profile.TenantIDs.
const tenantPlaceholder = "{tid}"

// preset is a provider's documented access token shape; its doc comment in
// presets gives the source of every field.
type preset struct {
	types       []string
	scopeClaims []string
	clientClaim string
	required    []RequiredClaim
	tenant      bool // reads "tid" into TokenInfo.Tenant
	// needAudiences: the provider never puts a URL in "aud", so a profile
	// without Audiences would refuse every token.
	needAudiences string
}

// presets are the providers' documented access token shapes (sources as of
// late 2026; the README's table repeats them row by row).
var presets = map[string]preset{
	// Microsoft Entra ID, v2.0 access tokens. "typ" is always JWT; "aud"
	// is always the API's client ID; scopes in "scp" (a space-separated
	// string) and, for app-only tokens, app roles in "roles" (an array);
	// the client in "azp", present only in v2.0 access tokens; "ver" is
	// "2.0"; "tid" the tenant (access-token-claims-reference). ID tokens
	// carry no "azp" (id-token-claims-reference). The issuer is
	// https://login.microsoftonline.com/{tid}/v2.0, the tenant-independent
	// template filled with the token's tid and compared exactly
	// (access-tokens, "Validate the issuer").
	"entra": {types: []string{TypeJWT}, scopeClaims: []string{"scp", "roles"}, clientClaim: "azp",
		required: []RequiredClaim{{Claim: "ver", Values: []string{"2.0"}}}, tenant: true,
		needAudiences: "the entra preset needs the API's application (client) ID: v2.0 tokens name the API that way, never by URL"},
	// Microsoft Entra ID, v1.0 access tokens: as v2.0, but "aud" is the
	// App ID URI or client ID requested, the client in "appid" (v1.0
	// only), "ver" "1.0", and the issuer https://sts.windows.net/{tid}/
	// (access-token-claims-reference; access-tokens, v1.0 sample).
	"entra-v1": {types: []string{TypeJWT}, scopeClaims: []string{"scp", "roles"}, clientClaim: "appid",
		required: []RequiredClaim{{Claim: "ver", Values: []string{"1.0"}}}, tenant: true},
	// Okta custom authorization server. The header holds only "alg" and
	// "kid"; scopes in "scp", an array; the client in "cid"; "aud" the
	// authorization server's configured audience (OpenID Connect & OAuth
	// 2.0 API, access token reserved claims). ID tokens carry no "cid".
	"okta": {types: []string{TypeNone}, scopeClaims: []string{"scp"}, clientClaim: "cid"},
	// Auth0, its default access token profile: "typ" JWT, the client in
	// "azp", "aud" the API identifier (a list with the userinfo URL for
	// openid), "scope" a string (Access Token Profiles), and with RBAC's
	// "Add Permissions in the Access Token" the array "permissions"
	// (Enable Role-Based Access Control for APIs). Auth0's RFC 9068 profile
	// is RFC 9068: use no preset for it.
	"auth0": {types: []string{TypeJWT}, scopeClaims: []string{"scope", "permissions"}, clientClaim: "azp"},
	// Keycloak 26: "typ" JWT, or at+jwt with the client option "Use at+jwt
	// as access token header type" (TokenUtil); the client in "azp", scopes
	// in "scope", a string (TokenManager.initToken); the claim "typ" is
	// "Bearer" in access tokens, "DPoP" in DPoP-bound ones and "ID" in ID
	// tokens (TokenUtil); "aud" only from an audience mapper or client roles
	// (Server Administration Guide, "Audience support").
	"keycloak": {types: []string{TypeJWT, TypeAccessToken}, scopeClaims: []string{"scope"}, clientClaim: "azp",
		required: []RequiredClaim{{Claim: "typ", Values: []string{"Bearer", "DPoP"}}}},
	// Amazon Cognito user pools: the header holds only "kid" and "alg";
	// "token_use" is "access" ("id" in ID tokens), the app client in
	// "client_id", scopes in "scope", a string; no "aud" (Understanding the
	// access token; Verifying JSON web tokens).
	"cognito": {types: []string{TypeNone}, scopeClaims: []string{"scope"}, clientClaim: "client_id",
		required: []RequiredClaim{{Claim: "token_use", Values: []string{"access"}}}},
	// Ory Hydra v2 with JWT access tokens: "typ" JWT (fosite's token
	// header), the reserved claims iss, sub, aud, exp, nbf, iat, jti,
	// client_id, scp, ext (oauth2/session.go); scopes in "scp", an array,
	// or with strategies.jwt.scope_claim in "scope", a string; "aud" from
	// the audience parameter (Token audience guide).
	"hydra": {types: []string{TypeJWT}, scopeClaims: []string{"scp", "scope"}, clientClaim: "client_id"},
}

// Presets returns the names [Profile].Preset accepts, sorted.
func Presets() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Effective returns p with its preset's values filled in and its
// overrides applied, Preset kept, or an error naming the field when p is
// invalid: what the Verifier applies to the issuer's tokens. Errors match
// [ErrInvalidConfig].
func (p Profile) Effective() (Profile, error) {
	e, _, err := p.effective()
	return e, err
}

// effective is Effective and the preset it used.
func (p Profile) effective() (Profile, preset, error) {
	var pr preset
	if p.Preset != "" {
		var ok bool
		if pr, ok = presets[p.Preset]; !ok {
			return p, pr, profileError("Preset", "unknown preset %q (want one of %s)", p.Preset, strings.Join(Presets(), ", "))
		}
	}
	e := p
	if e.Types == nil {
		e.Types = slices.Clone(pr.types)
		if p.Preset == "" {
			e.Types = []string{TypeAccessToken}
		}
	}
	if e.ScopeClaims == nil {
		e.ScopeClaims = slices.Clone(pr.scopeClaims)
		if p.Preset == "" {
			e.ScopeClaims = []string{"scope"}
		}
	}
	if e.ClientClaim == "" {
		e.ClientClaim = pr.clientClaim
		if p.Preset == "" {
			e.ClientClaim = "client_id"
		}
	}
	e.RequiredClaims = mergeRequired(pr.required, p.RequiredClaims)
	if err := e.validate(pr); err != nil {
		return p, pr, err
	}
	return e, pr, nil
}

// mergeRequired is the preset's requirements with those of the same claim
// replaced by the override's, then the override's others.
func mergeRequired(base, over []RequiredClaim) []RequiredClaim {
	var out []RequiredClaim
	for _, b := range base {
		if !slices.ContainsFunc(over, func(o RequiredClaim) bool { return o.Claim == b.Claim }) {
			out = append(out, RequiredClaim{Claim: b.Claim, Values: slices.Clone(b.Values)})
		}
	}
	for _, o := range over {
		out = append(out, RequiredClaim{Claim: o.Claim, Values: slices.Clone(o.Values)})
	}
	return out
}

// validate checks an effective profile.
func (p *Profile) validate(pr preset) error {
	if len(p.Types) == 0 {
		return profileError("Types", "empty: a token type must be accepted")
	}
	for i, t := range p.Types {
		if t != TypeAccessToken && t != TypeJWT && t != TypeNone {
			return profileError("Types", "%q is not %s, %s or %s", t, TypeAccessToken, TypeJWT, TypeNone)
		}
		if slices.Contains(p.Types[:i], t) {
			return profileError("Types", "%q listed twice", t)
		}
	}
	if err := checkIdentifiers("Audiences", p.Audiences, 0); err != nil {
		return err
	}
	if pr.needAudiences != "" && len(p.Audiences) == 0 {
		return profileError("Audiences", "%s", pr.needAudiences)
	}
	if len(p.ScopeClaims) == 0 {
		return profileError("ScopeClaims", "empty: name at least one claim")
	}
	for i, c := range p.ScopeClaims {
		if _, err := claimPath("ScopeClaims", c); err != nil {
			return err
		}
		if slices.Contains(p.ScopeClaims[:i], c) {
			return profileError("ScopeClaims", "%q listed twice", c)
		}
	}
	if _, err := claimPath("ClientClaim", p.ClientClaim); err != nil {
		return err
	}
	for i, r := range p.RequiredClaims {
		if _, err := claimPath("RequiredClaims", r.Claim); err != nil {
			return err
		}
		if slices.ContainsFunc(p.RequiredClaims[:i], func(o RequiredClaim) bool { return o.Claim == r.Claim }) {
			return profileError("RequiredClaims", "claim %q listed twice", r.Claim)
		}
		if len(r.Values) == 0 || slices.Contains(r.Values, "") {
			return profileError("RequiredClaims", "claim %q needs non-empty values", r.Claim)
		}
	}
	if len(p.TenantIDs) > MaxTenants {
		return profileError("TenantIDs", "%d tenants, at most %d", len(p.TenantIDs), MaxTenants)
	}
	for i, t := range p.TenantIDs {
		if !isTenantID(t) {
			return profileError("TenantIDs", "%q is not a tenant ID (a GUID in lower case; common, organizations and consumers are not tenants)", t)
		}
		if slices.Contains(p.TenantIDs[:i], t) {
			return profileError("TenantIDs", "%q listed twice", t)
		}
	}
	if err := checkIdentifiers("ClientIDs", p.ClientIDs, MaxClientIDs); err != nil {
		return err
	}
	if p.InsecureAcceptMissingAudience && len(p.ClientIDs) == 0 {
		return profileError("InsecureAcceptMissingAudience",
			"needs ClientIDs: a token without an audience is bound to the clients named there, or to nothing")
	}
	return nil
}

// registeredClaims are decoded by the verifier itself and cannot be a
// profile's claim.
var registeredClaims = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "cnf"}

func claimPath(field, s string) (jwtverify.ClaimPath, error) {
	cp, err := jwtverify.ParseClaimPath(s)
	if err != nil {
		return cp, profileError(field, "%v", err)
	}
	if slices.Contains(registeredClaims, cp.First()) {
		return cp, profileError(field, "%q is checked by the verifier itself", s)
	}
	return cp, nil
}

// checkIdentifiers checks a list of audience or client identifiers:
// non-empty, at most 2048 bytes, no white space or control characters, no
// duplicates, at most max entries (0: no bound).
func checkIdentifiers(field string, ids []string, max int) error {
	if max > 0 && len(ids) > max {
		return profileError(field, "%d entries, at most %d", len(ids), max)
	}
	for i, id := range ids {
		if id == "" || len(id) > 2048 || strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return profileError(field, "%q is not an identifier (1 to 2048 bytes, no white space or control characters)", id)
		}
		if slices.Contains(ids[:i], id) {
			return profileError(field, "%q listed twice", id)
		}
	}
	return nil
}

// isTenantID reports whether s is a GUID in the lower-case 8-4-4-4-12 form
// Entra writes in "tid".
func isTenantID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// profileError is a configuration error naming the Profile field.
func profileError(field, format string, args ...any) error {
	return &fieldError{field: "Profile." + field, msg: fmt.Sprintf(format, args...)}
}

// fieldError is a configuration error naming a field, and in a Config the
// issuer it belongs to (where). It matches [ErrInvalidConfig].
type fieldError struct{ where, field, msg string }

func (e *fieldError) Error() string {
	return ErrInvalidConfig.Error() + ": " + e.where + e.field + ": " + e.msg
}

func (e *fieldError) Unwrap() error { return ErrInvalidConfig }
