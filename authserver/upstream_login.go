package authserver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// UpstreamSubject is the subject ("sub" of our tokens, the user of our
// grants and remembered consents) for the upstream user (issuer, sub):
// "u-" followed by the unpadded base64url SHA-256 of the issuer, a zero
// byte and the upstream sub. It is stable for as long as the provider's
// issuer identifier and its sub for the user are, distinct for different
// providers, and reveals neither.
func UpstreamSubject(issuer, sub string) string {
	h := sha256.New()
	h.Write([]byte(issuer))
	h.Write([]byte{0})
	h.Write([]byte(sub))
	return "u-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// upstreamCookie is the name of the upstream login's browser binding
// cookie, without the __Host- prefix of [Server.cookieName]. Unlike the
// consent cookie it is SameSite=Lax: the callback is a top-level navigation
// from the provider's site, on which browsers do not send SameSite=Strict
// cookies.
const upstreamCookie = "mcpauth-upstream"

// upstreamBrowserID returns this browser's upstream binding cookie, a
// fresh one when it has none. The cookie is set again either way, so it
// outlives the login starting now even when an earlier login set it.
func (s *Server) upstreamBrowserID(w http.ResponseWriter, r *http.Request) string {
	v := cookieValue(r, s.cookieName(upstreamCookie))
	if len(v) != 43 {
		v = randomToken(32)
	}
	http.SetCookie(w, &http.Cookie{
		Name: s.cookieName(upstreamCookie), Value: v, Path: "/", HttpOnly: true, Secure: s.cfg.https,
		SameSite: http.SameSiteLaxMode, MaxAge: int(upstreamLoginTTL.Seconds()),
	})
	return v
}

// startUpstream sends the browser to the provider's authorization endpoint
// for req. The state, nonce and PKCE verifier are fresh and random; the
// state is single-use, expires after upstreamLoginTTL and is bound to this
// browser by a cookie set now, with the consent. consented records that the
// user already approved req on our consent page.
func (s *Server) startUpstream(w http.ResponseWriter, r *http.Request, req *authRequest, consented bool) {
	m, err := s.upstream.metadata(r.Context())
	if err != nil {
		s.upstreamUnavailable(w, r, err)
		return
	}
	browser := s.upstreamBrowserID(w, r)
	state, nonce, verifier := randomToken(32), randomToken(32), oauth2.GenerateVerifier()
	rec := pendingRecord(upstreamPendingID(state), "", browser, req, s.clock.Now().Add(upstreamLoginTTL))
	rec.CSRFHash = ""
	rec.Upstream = &PendingUpstreamLogin{Nonce: nonce, Verifier: verifier, Consented: consented, RememberBrowser: req.browser}
	if err := s.store.Pending.SavePending(r.Context(), rec); err != nil {
		s.renderStoreError(w, r, "saving an upstream login failed", err)
		return
	}
	target := s.upstream.oauth2Config(m, s.UpstreamCallbackURL()).AuthCodeURL(state,
		s.upstream.authCodeOptions(verifier, nonce)...)
	redirect(w, r, target)
}

// upstreamUnavailable answers with a page when the provider cannot be
// reached or answers nonsense: the user sees why, nothing hangs.
func (s *Server) upstreamUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.log.WarnContext(r.Context(), "upstream identity provider unavailable", "err", err)
	s.renderError(w, r, http.StatusBadGateway, oauthErr(oauthmeta.CodeTemporarilyUnavailable,
		"the identity provider could not be reached or gave an invalid answer; try again later"))
}

// handleUpstreamCallback is the redirect URI registered at the provider.
// It redeems the state (only in the browser that started the login, only
// once), exchanges the code with the PKCE verifier, verifies the ID token,
// applies the allow-list and then either issues our code to the MCP client
// (the user approved it on our consent page, or approved it before in the
// browser that started the login, see [Server.consentRemembered]) or shows
// the consent page.
func (s *Server) handleUpstreamCallback(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q["state"]) != 1 || len(q["code"]) > 1 || len(q["iss"]) > 1 {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed callback"))
		return
	}
	browser := cookieValue(r, s.cookieName(upstreamCookie))
	bh := []byte(tokenKey(browser))
	rec, err := s.store.Pending.TakePending(r.Context(), upstreamPendingID(q.Get("state")), s.clock.Now(),
		func(p *PendingAuthorization) bool {
			return p.Upstream != nil && browser != "" && subtle.ConstantTimeCompare([]byte(p.BrowserHash), bh) == 1
		})
	if errors.Is(err, ErrNotFound) {
		s.renderError(w, r, http.StatusForbidden, oauthErr(oauthmeta.CodeAccessDenied,
			"this login is unknown, expired, already used, or was started in another browser"))
		return
	}
	if err != nil {
		s.renderStoreError(w, r, "taking an upstream login failed", err)
		return
	}
	l := &upstreamLogin{req: rec.request(), PendingUpstreamLogin: *rec.Upstream}
	id, tok, oe := s.finishUpstream(r.Context(), q, l)
	if oe != nil {
		s.redirectError(w, r, l.req, oe)
		return
	}
	keys := keysOf(id, s.upstream.cfg.Allow.InsecureAllowUnverifiedEmail)
	if keys.emailRefused {
		s.log.InfoContext(r.Context(), "upstream email is not an accepted address: it matches no email rule", "client_id", l.req.client.ID)
	}
	if !s.upstream.allow.admits(keys) {
		s.log.InfoContext(r.Context(), "upstream user refused by the allow-list", "client_id", l.req.client.ID)
		s.redirectError(w, r, l.req, oauthErr(oauthmeta.CodeAccessDenied, "this user may not use this server"))
		return
	}
	if oe := s.upstream.policy.applyTo(r.Context(), s.log, l.req, keys); oe != nil {
		s.redirectError(w, r, l.req, oe)
		return
	}
	l.req.subject = UpstreamSubject(id.Issuer, id.Subject)
	if l.req.upstreamTokens, err = s.keepUpstreamTokens(r.Context(), tok); err != nil {
		s.log.ErrorContext(r.Context(), "keeping the upstream tokens failed", "err", err)
		oe := oauthErr(oauthmeta.CodeServerError, "internal error")
		errors.As(err, &oe) // a store's temporarily_unavailable goes to the client as is
		s.redirectError(w, r, l.req, oe)
		return
	}
	s.log.InfoContext(r.Context(), "upstream login", "sub", l.req.subject, "client_id", l.req.client.ID)
	switch {
	case l.Consented:
		s.rememberConsent(r.Context(), l.req)
		s.approve(w, r, l.req)
	case s.consentRemembered(r.Context(), l.req):
		s.approve(w, r, l.req)
	default:
		s.showConsent(w, r, l.req)
	}
}

// finishUpstream turns the provider's answer into a verified identity, or
// into the error the MCP client gets.
func (s *Server) finishUpstream(ctx context.Context, q url.Values, l *upstreamLogin) (*UpstreamIdentity, *oauth2.Token, *oauthmeta.Error) {
	refused := oauthErr(oauthmeta.CodeAccessDenied, "the login at the identity provider failed")
	if e := q.Get("error"); e != "" {
		s.log.InfoContext(ctx, "upstream refused the login", "error", truncateLog(e))
		if e == string(oauthmeta.CodeTemporarilyUnavailable) || e == string(oauthmeta.CodeServerError) {
			return nil, nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
		}
		return nil, nil, oauthErr(oauthmeta.CodeAccessDenied, "the identity provider refused the login")
	}
	m, err := s.upstream.metadata(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "upstream identity provider unavailable", "err", err)
		return nil, nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
	}
	// RFC 9207: a provider that sends "iss" must send its own.
	if iss, sent := q["iss"]; (sent && iss[0] != m.Issuer) || (!sent && m.AuthorizationResponseIss) {
		s.log.WarnContext(ctx, "upstream callback with a wrong or missing iss")
		return nil, nil, refused
	}
	if q.Get("code") == "" {
		return nil, nil, refused
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(l.Verifier)}
	if a := s.upstream.assertions; a != nil {
		jwt, err := a.Sign(s.upstream.assertionAudience(m))
		if err != nil {
			s.log.ErrorContext(ctx, "signing the upstream client assertion failed", "err", err)
			return nil, nil, oauthErr(oauthmeta.CodeServerError, "internal error")
		}
		opts = append(opts, oauth2.SetAuthURLParam("client_assertion_type", jwtassert.ClientAssertionType),
			oauth2.SetAuthURLParam("client_assertion", jwt))
	}
	hc := cmp.Or(s.upstream.acceptJSON, s.upstream.fetcher.Client()) // the token endpoint's client
	tok, err := s.upstream.oauth2Config(m, s.UpstreamCallbackURL()).Exchange(
		context.WithValue(ctx, oauth2.HTTPClient, hc), q.Get("code"), opts...)
	if err != nil {
		// A RetrieveError's text carries the response body, which may
		// echo the code and verifier and is up to 1 MiB: log the status.
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.Response != nil {
			if re.Response.StatusCode < http.StatusInternalServerError {
				s.log.WarnContext(ctx, "upstream token endpoint refused the code", "error", truncateLog(re.ErrorCode))
				return nil, nil, refused
			}
			s.log.WarnContext(ctx, "upstream token endpoint unavailable", "status", re.Response.StatusCode)
		} else {
			s.log.WarnContext(ctx, "upstream token endpoint unavailable", "err", err)
		}
		return nil, nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
	}
	id, err := s.upstream.identity(ctx, tok, l.Nonce)
	if errors.Is(err, errUpstreamUnavailable) {
		s.log.WarnContext(ctx, "upstream user-info endpoint unavailable", "err", err)
		return nil, nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
	}
	if err != nil {
		s.log.WarnContext(ctx, "upstream identity refused", "err", err)
		return nil, nil, refused
	}
	return id, tok, nil
}

// upstreamPendingID is the PendingStore key of the login with this upstream
// state: the state itself is never stored.
func upstreamPendingID(state string) string { return "upstream." + tokenKey(state) }

// truncateLog bounds a peer-chosen value before it is logged.
func truncateLog(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// keepUpstreamTokens seals the tokens of a finished upstream login into
// the vault and returns the record's ID for the authorization request;
// "" without a vault.
func (s *Server) keepUpstreamTokens(ctx context.Context, tok *oauth2.Token) (string, error) {
	if s.vault == nil || tok == nil {
		return "", nil
	}
	return s.vault.keep(ctx, tok, s.clock.Now().Add(PendingTTL+s.cfg.CodeTTL))
}
