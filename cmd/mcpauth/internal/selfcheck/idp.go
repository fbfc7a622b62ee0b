package selfcheck

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// IdPConfig says which identity provider [RunIdP] probes. Only Issuer is
// required.
type IdPConfig struct {
	// Issuer is the provider's issuer identifier, exactly as its metadata
	// names it. REQUIRED; https, or plain http to a loopback host with
	// InsecureAllowHTTPLoopback.
	Issuer string
	// Resource is the MCP server's canonical URL, the audience its tokens
	// must name. Empty means the token is not verified, only described.
	Resource string
	// Token is an access token the provider issued for Resource. Empty
	// skips the token checks. It is sent to no one (the keys come from the
	// provider's metadata) and never appears in the report.
	Token string
	// InsecureAllowHTTPLoopback permits plain http and loopback addresses
	// for the provider and Resource.
	InsecureAllowHTTPLoopback bool
	// Timeout bounds each request. Zero means [DefaultTimeout].
	Timeout time.Duration
}

// IdPReport is the outcome of [RunIdP]: the graded checks and the advice.
type IdPReport struct {
	Report
	// Provider is the provider recognised from its metadata ("hydra",
	// "entra", ...), or "".
	Provider string `json:"provider,omitempty"`
	// Preset is the resource profile preset the token passed with ("" is
	// RFC 9068, no preset), or the provider's when no token was verified.
	Preset string `json:"preset"`
	// Verified reports whether Token passed verification with Preset.
	Verified bool `json:"verified"`
	// Advice lists the flags and provider settings that make the provider
	// work with mcpauth, one line each.
	Advice []string `json:"advice"`
}

// MarshalJSON encodes the report as [Report] does, with the provider,
// preset, verification and advice added.
func (r *IdPReport) MarshalJSON() ([]byte, error) {
	base, err := r.Report.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, err
	}
	m["provider"], m["preset"], m["verified"], m["advice"] = r.Provider, r.Preset, r.Verified, r.Advice
	if r.Advice == nil {
		m["advice"] = []string{}
	}
	return json.Marshal(m)
}

// WriteTable writes the report as [Report.WriteTable] does, then the
// preset and the advice, one line each.
func (r *IdPReport) WriteTable(w io.Writer) error {
	if err := r.Report.WriteTable(w); err != nil {
		return err
	}
	verified := "not verified"
	if r.Verified {
		verified = "the token passed"
	}
	if _, err := fmt.Fprintf(w, "preset: %s (%s)\n", presetName(r.Preset), verified); err != nil {
		return err
	}
	for _, a := range r.Advice {
		if _, err := fmt.Fprintf(w, "  %s\n", a); err != nil {
			return err
		}
	}
	return nil
}

// provider is what mcpauth knows of one identity provider.
type provider struct {
	name, preset string
	// match recognises the provider from its metadata.
	match func(iss string, m *oauthmeta.AuthServerMetadata) bool
	// settings are the provider-side settings mcpauth needs.
	settings []string
	// audienceParam: the provider puts in aud the audience parameter,
	// not the RFC 8707 resource.
	audienceParam bool
	// loginFlags are the login flags for the provider's quirks: metadata
	// without code_challenge_methods_supported, no resource parameter,
	// the API named by a scope.
	loginFlags string
}

// providers are the identity providers [RunIdP] recognises, most specific
// first.
var providers = []provider{
	{name: "hydra", preset: "hydra", audienceParam: true,
		match: func(iss string, m *oauthmeta.AuthServerMetadata) bool {
			base := strings.TrimSuffix(iss, "/")
			return m.AuthorizationEndpoint == base+"/oauth2/auth" && m.TokenEndpoint == base+"/oauth2/token"
		},
		settings: []string{"Hydra: strategies.access_token: jwt (its default access tokens are opaque)",
			"Hydra: each client lists the MCP server's URL in its audience and the tool scopes in its scope"}},
	{name: "entra", preset: "entra",
		match: func(iss string, _ *oauthmeta.AuthServerMetadata) bool {
			return strings.HasPrefix(iss, "https://login.microsoftonline.com/") && strings.HasSuffix(iss, "/v2.0")
		},
		settings:   []string{"Entra: \"requestedAccessTokenVersion\": 2 in the API's manifest; protect needs --issuer-audience with the API's client ID"},
		loginFlags: "--assume-s256 --omit-resource --resource-scope <Application ID URI>/.default"},
	{name: "entra-v1", preset: "entra-v1",
		match: func(iss string, _ *oauthmeta.AuthServerMetadata) bool {
			return strings.HasPrefix(iss, "https://sts.windows.net/")
		},
		settings: []string{"Entra v1.0 tokens: protect needs --issuer-audience with the App ID URI"}},
	{name: "cognito", preset: "cognito",
		match: func(iss string, _ *oauthmeta.AuthServerMetadata) bool {
			return strings.HasPrefix(iss, "https://cognito-idp.") && strings.Contains(iss, ".amazonaws.com/")
		},
		settings:   []string{"Cognito: access tokens have no aud; give the MCP server an app client of its own and bind to it (--issuer-insecure-accept-missing-audience --issuer-client ID)"},
		loginFlags: "--assume-s256"},
	{name: "keycloak", preset: "keycloak",
		match:    func(iss string, _ *oauthmeta.AuthServerMetadata) bool { return strings.Contains(iss, "/realms/") },
		settings: []string{"Keycloak: an Audience mapper whose Included Custom Audience is the MCP server's URL"}},
	{name: "auth0", preset: "auth0", audienceParam: true,
		match:    func(iss string, _ *oauthmeta.AuthServerMetadata) bool { return strings.Contains(iss, ".auth0.com/") },
		settings: []string{"Auth0: an API whose Identifier is the MCP server's URL"}},
	{name: "okta", preset: "okta",
		match: func(iss string, _ *oauthmeta.AuthServerMetadata) bool {
			return strings.Contains(iss, ".okta.com/oauth2/") || strings.Contains(iss, ".oktapreview.com/oauth2/")
		},
		settings: []string{"Okta: a custom authorization server whose Audience is the MCP server's URL"}},
}

// RunIdP probes the identity provider at cfg.Issuer as an authorization
// server for MCP: its metadata (found in the MCP order, issuer identical,
// usable endpoints, S256, RFC 9207 iss, Client ID Metadata Documents,
// dynamic registration, keys), and with cfg.Token the token's shape and,
// with cfg.Resource too, whether the presets of `protect` accept it. The
// report's advice names the preset, the flags and the provider settings
// that make the provider work. Besides the authorization server checks of
// [Run] (CL-06, CL-07, AS-02, AS-03, AS-06, AS-15) its results are IDP-01
// dynamic registration, IDP-02 signing keys, IDP-03 the provider
// recognised, IDP-04 the token a JWT, IDP-05 its issuer, IDP-06 a preset
// that accepts it. It returns an error wrapping [ErrConfig], and no report,
// when cfg is unusable.
func RunIdP(ctx context.Context, cfg IdPConfig) (*IdPReport, error) {
	policy := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}
	if err := policy.CheckIssuer(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("%w: Issuer: %w", ErrConfig, err)
	}
	if cfg.Resource != "" {
		if err := policy.CheckURL(cfg.Resource); err != nil {
			return nil, fmt.Errorf("%w: Resource: %w", ErrConfig, err)
		}
	}
	if strings.ContainsAny(cfg.Token, " \t\r\n\x00") {
		return nil, fmt.Errorf("%w: Token contains forbidden characters", ErrConfig)
	}
	p, err := Config{URL: cfg.Issuer, Token: cfg.Token, InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback, Timeout: cfg.Timeout}.prepare()
	if err != nil {
		return nil, err
	}
	defer p.fetcher.Client().CloseIdleConnections()
	defer p.client.CloseIdleConnections()
	r := &runner{cfg: p, report: &Report{Time: p.Now.Now()}}
	r.report.URL = r.clean(cfg.Issuer)
	out := &IdPReport{}
	r.checkAuthServer(ctx, cfg.Issuer)
	var md *oauthmeta.AuthServerMetadata
	if len(r.authServers) == 1 {
		md = r.authServers[0].meta
		r.addEither(md.RegistrationEndpoint != "", "IDP-01", "dynamic client registration", r.quote(md.RegistrationEndpoint),
			StatusWarn, "no registration_endpoint: register a client with the provider and pass --client-id")
		r.addEither(md.JWKSURI != "", "IDP-02", "signing keys published", r.quote(md.JWKSURI),
			StatusFail, "no jwks_uri: protect cannot verify the provider's tokens (introspection only)")
		for _, pv := range providers {
			if pv.match(cfg.Issuer, md) {
				out.Provider, out.Preset = pv.name, pv.preset
				break
			}
		}
		r.addEither(out.Provider != "", "IDP-03", "provider recognised", out.Provider,
			StatusSkip, "not one of the presets' providers from its metadata; the token decides")
	}
	var claims map[string]any
	if cfg.Token != "" && md != nil {
		claims = r.checkIdPToken(ctx, cfg, out)
	}
	out.Report = *r.report
	out.Advice = idpAdvice(cfg, out, claims)
	return out, ctx.Err()
}

// checkIdPToken describes the token's shape and, with a resource, finds the
// preset that accepts it. It returns the token's claims, or nil.
func (r *runner) checkIdPToken(ctx context.Context, cfg IdPConfig, out *IdPReport) map[string]any {
	header, claims, err := decodeJWT(cfg.Token)
	if err != nil {
		r.add("IDP-04", "access token is a JWT", StatusFail, "%v: protect verifies JWTs (or introspects, with --introspect-url)", err)
		return nil
	}
	typ, _ := header["typ"].(string)
	r.add("IDP-04", "access token is a JWT", StatusPass, "typ %s, aud %s, scope claims %s, client %s",
		r.quote(typ), r.quote(fmt.Sprint(claims["aud"])), scopeClaimsOf(claims), clientClaimOf(claims))
	if iss, _ := claims["iss"].(string); iss != cfg.Issuer {
		r.add("IDP-05", "token issuer identical", StatusFail, "iss %s", r.quote(iss))
	} else {
		r.add("IDP-05", "token issuer identical", StatusPass, "%s", r.quote(iss))
	}
	if cfg.Resource == "" {
		r.add("IDP-06", "token accepted by a preset", StatusSkip, "pass --resource to verify the token as protect would")
		return claims
	}
	// The recognised provider's preset first, then RFC 9068 and the
	// presets that need nothing only the operator knows.
	var candidates []string
	if out.Provider != "" {
		candidates = append(candidates, out.Preset)
	}
	for _, c := range []string{"", "hydra", "okta", "auth0", "keycloak", "cognito"} {
		if !slices.Contains(candidates, c) {
			candidates = append(candidates, c)
		}
	}
	var firstErr error
	for _, preset := range candidates {
		err := verifyWith(ctx, cfg, preset, claims)
		if err == nil {
			out.Preset, out.Verified = preset, true
			r.add("IDP-06", "token accepted by a preset", StatusPass, "preset %s", presetName(preset))
			return claims
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("preset %s: %w", presetName(preset), err)
		}
	}
	r.add("IDP-06", "token accepted by a preset", StatusFail, "%v", firstErr)
	return claims
}

// verifyWith verifies cfg.Token for cfg.Resource with the preset, the keys
// from the provider's metadata. Entra's presets take the token's audience,
// which only the operator can confirm (the advice names it).
func verifyWith(ctx context.Context, cfg IdPConfig, preset string, claims map[string]any) error {
	prof := resource.Profile{Preset: preset}
	if preset == "entra" || preset == "entra-v1" {
		prof.Audiences = audiences(claims)
	}
	v, err := resource.New(resource.Config{Resource: cfg.Resource, Issuers: []resource.Issuer{{Issuer: cfg.Issuer, Profile: prof}},
		InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback})
	if err != nil {
		return err
	}
	defer v.Close()
	_, err = v.Verify(ctx, cfg.Token)
	return err
}

// idpAdvice is the advice lines for the report.
func idpAdvice(cfg IdPConfig, out *IdPReport, claims map[string]any) []string {
	var pv *provider
	for i := range providers {
		if providers[i].name == out.Provider {
			pv = &providers[i]
		}
	}
	res := cmpOr(cfg.Resource, "<MCP server URL>")
	var adv []string
	flags := "mcpauth protect --upstream <URL> --resource " + res + " --issuer " + cfg.Issuer
	if out.Preset != "" {
		flags += " --issuer-profile " + out.Preset
	}
	if out.Preset == "entra" || out.Preset == "entra-v1" {
		flags += " --issuer-audience " + cmpOr(strings.Join(audiences(claims), " --issuer-audience "), "<the API's client ID>")
	}
	adv = append(adv, flags)
	login := "mcpauth login"
	if len(out.Results) > 0 && !hasPass(out.Results, "IDP-01") {
		login += " --client-id <registered client>"
	}
	if pv != nil && pv.audienceParam {
		login += " --auth-param audience=" + res
	}
	if pv != nil && pv.loginFlags != "" {
		login += " " + pv.loginFlags
	}
	adv = append(adv, login+" "+res)
	if pv != nil {
		adv = append(adv, pv.settings...)
	}
	if claims != nil && cfg.Resource != "" && !slices.Contains(audiences(claims), cfg.Resource) && (pv == nil || pv.audienceParam) {
		adv = append(adv, "the token's aud does not name "+cfg.Resource+": ask the provider for that audience (--auth-param audience=...)")
	}
	return adv
}

func hasPass(rs []Result, id string) bool {
	return slices.ContainsFunc(rs, func(r Result) bool { return r.ID == id && r.Status == StatusPass })
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func presetName(p string) string {
	if p == "" {
		return "(none: RFC 9068)"
	}
	return p
}

// decodeJWT decodes a compact JWS's header and claims without verifying
// it, bounded.
func decodeJWT(tok string) (header, claims map[string]any, err error) {
	if len(tok) > 16<<10 {
		return nil, nil, errors.New("longer than 16 KiB")
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, nil, errors.New("not a JWT (opaque)")
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		data, derr := base64.RawURLEncoding.DecodeString(parts[i])
		if derr != nil || json.Unmarshal(data, dst) != nil || *dst == nil {
			return nil, nil, errors.New("not a JWT (undecodable)")
		}
	}
	return header, claims, nil
}

// audiences is the token's aud as a list.
func audiences(claims map[string]any) []string {
	switch a := claims["aud"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// scopeClaimsOf names the claims of the token that carry scopes.
func scopeClaimsOf(claims map[string]any) string {
	var names []string
	for _, c := range []string{"scope", "scp", "permissions", "roles"} {
		if _, ok := claims[c]; ok {
			names = append(names, c)
		}
	}
	return cmpOr(strings.Join(names, " "), "none")
}

// clientClaimOf names the claim of the token that names the client.
func clientClaimOf(claims map[string]any) string {
	for _, c := range []string{"client_id", "azp", "cid", "appid"} {
		if _, ok := claims[c]; ok {
			return c
		}
	}
	return "none"
}
