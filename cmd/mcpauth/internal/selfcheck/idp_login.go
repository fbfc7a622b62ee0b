package selfcheck

import (
	"context"
	"slices"
	"strings"
)

// IdPLogin is what one authorization-code login with the provider, by the
// client of `mcpauth login`, saw. [RunIdP] grades it (IDP-07 to IDP-09)
// and checks its access token as it checks [IdPConfig.Token].
type IdPLogin struct {
	// Err is why the login failed; nil when AccessToken is set.
	Err error
	// Redirected reports that the authorization response reached the
	// client; ISS and ISSPresent are its iss parameter.
	Redirected, ISSPresent bool
	ISS                    string
	// AccessToken and RefreshToken are the tokens the login obtained.
	// They never appear in the report.
	AccessToken, RefreshToken string
	// Refreshed and RefreshedRefreshToken are what one refresh with
	// RefreshToken returned; RefreshErr is why it failed.
	Refreshed, RefreshedRefreshToken string
	RefreshErr                       error
}

// checkLoginISS is IDP-07: the authorization response's iss (RFC 9207).
func (r *runner) checkLoginISS(cfg IdPConfig, advertised bool) {
	l := cfg.Login
	const id, name = "IDP-07", "iss in the authorization response"
	switch {
	case !l.Redirected:
		r.add(id, name, StatusSkip, "no authorization response: %v", l.Err)
	case l.ISSPresent && l.ISS == cfg.Issuer:
		r.add(id, name, StatusPass, "%s", r.quote(l.ISS))
	case l.ISSPresent:
		r.add(id, name, StatusFail, "iss %s is not the issuer: the client refuses the response", r.quote(l.ISS))
	case advertised:
		r.add(id, name, StatusFail, "absent although the metadata advertises authorization_response_iss_parameter_supported: the client refuses the response")
	default:
		r.add(id, name, StatusWarn, "absent and not advertised: a client cannot detect mix-up attacks with this provider")
	}
}

// checkLoginResource is IDP-08: the token's aud names the resource the
// client asked for (RFC 8707).
func (r *runner) checkLoginResource(cfg IdPConfig) {
	const id, name = "IDP-08", "resource honoured"
	switch {
	case cfg.Resource == "":
		r.add(id, name, StatusSkip, "pass --resource to check the token's audience")
		return
	case cfg.Login.Err != nil:
		r.add(id, name, StatusSkip, "no token: %v", cfg.Login.Err)
		return
	}
	_, claims, err := decodeJWT(cfg.Login.AccessToken)
	switch {
	case err != nil:
		r.add(id, name, StatusSkip, "%v: its audience cannot be read", err)
	case slices.Contains(audiences(claims), cfg.Resource):
		r.add(id, name, StatusPass, "aud names %s", r.quote(cfg.Resource))
	default:
		r.add(id, name, StatusFail, "aud %s does not name %s: pass --auth-param audience=%s, or set the audience at the provider",
			r.quote(strings.Join(audiences(claims), " ")), r.quote(cfg.Resource), cfg.Resource)
	}
}

// checkLoginRefresh is IDP-09: a refresh token issued, refreshing works,
// rotated or not, and the refreshed token still accepted by the preset
// that accepted the first one.
func (r *runner) checkLoginRefresh(ctx context.Context, cfg IdPConfig, out *IdPReport) {
	l := cfg.Login
	const id, name = "IDP-09", "refresh"
	switch {
	case l.Err != nil:
		r.add(id, name, StatusSkip, "no token: %v", l.Err)
		return
	case l.RefreshToken == "":
		r.add(id, name, StatusWarn, "no refresh token issued: users log in again whenever the token expires (enable refresh tokens for the client, or offline_access)")
		return
	case l.RefreshErr != nil:
		r.add(id, name, StatusFail, "refreshing failed: %v", l.RefreshErr)
		return
	}
	rotated := "not rotated"
	if l.RefreshedRefreshToken != "" && l.RefreshedRefreshToken != l.RefreshToken {
		rotated = "rotated"
	}
	if !out.Verified || cfg.Resource == "" {
		r.add(id, name, StatusPass, "refreshed; refresh token %s; the new token was not verified", rotated)
		return
	}
	nc := cfg
	nc.Token = l.Refreshed
	_, claims, _ := decodeJWT(l.Refreshed)
	if err := verifyWith(ctx, nc, out.Preset, claims); err != nil {
		r.add(id, name, StatusFail, "refreshed (refresh token %s), but preset %s refuses the new token: %v", rotated, presetName(out.Preset), err)
		return
	}
	r.add(id, name, StatusPass, "refreshed; refresh token %s; preset %s accepts the new token", rotated, presetName(out.Preset))
}
