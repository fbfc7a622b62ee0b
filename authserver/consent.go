package authserver

import (
	"cmp"
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

//go:embed templates
var templateFS embed.FS

// pageTemplates parses the embedded HTML templates.
func pageTemplates() *template.Template {
	return template.Must(template.ParseFS(templateFS, "templates/*.html"))
}

// consentCookie is the name of the consent browser binding cookie
// (SameSite=Strict), without the __Host- prefix of [Server.cookieName].
const consentCookie = "mcpauth-consent"

// cookieName is the name of a browser binding cookie. Browsers accept the
// __Host- prefix only on https with Secure, so plain-http loopback
// development uses the unprefixed name, still HttpOnly.
func (s *Server) cookieName(base string) string {
	if s.cfg.https {
		return "__Host-" + base
	}
	return base
}

// cookieValue is the value of r's cookie name; "" when it has none.
func cookieValue(r *http.Request, name string) string {
	if c, err := r.Cookie(name); err == nil {
		return c.Value
	}
	return ""
}

// consentView is what the consent page shows (requirements AS-14, CIMD-10).
type consentView struct {
	ClientName, ClientID, ClientHost, KindLabel string
	NameUnverified                              bool
	RedirectHost, RedirectURI                   string
	LocalhostWarning                            bool
	Scopes, Resources                           []string
	DefaultResource                             string
	Action, RequestID, CSRFToken                string
	Issuer, StylesheetURL                       string
	UpstreamHost                                string // where the user signs in after approving; empty without
	ChooseUpstream                              bool   // after approving, the user chooses where to sign in
	// UserCode is set for a device login: the code the device shows,
	// which the user confirms here; there is no redirect then.
	UserCode string
}

// showConsent renders the consent page for req, bound to this browser by a
// cookie and to this form by a CSRF token.
func (s *Server) showConsent(w http.ResponseWriter, r *http.Request, req *authRequest) {
	formActions := formActionSource(req.redirectURI)
	if req.device != "" {
		formActions = "" // nothing is redirected to the client
	}
	var upstreamHost string
	if p := s.login.chosen(req); p != nil && req.subject == "" {
		// Approve leads to the provider: the page's CSP form-action must
		// allow that redirect, and an unreachable provider is reported now
		// rather than after the click. (Without a chosen provider it leads
		// to our choice page.)
		endpoint, err := p.provider.AuthorizationEndpoint(r.Context())
		if err != nil {
			s.upstreamUnavailable(w, r, err)
			return
		}
		if src := formActionSource(endpoint); src != "" {
			formActions = strings.TrimSpace(formActions + " " + src)
		}
		upstreamHost = redirectHost(endpoint)
	}
	browser := s.browserID(w, r)
	id, csrf := randomToken(24), randomToken(24)
	if err := s.store.Pending.SavePending(r.Context(), pendingRecord(id, csrf, browser, req, s.clock.Now().Add(PendingTTL))); err != nil {
		s.renderStoreError(w, r, "saving a pending authorization failed", err)
		return
	}
	c := req.client
	v := consentView{
		ClientName:       cmp.Or(c.Name, c.ID),
		ClientID:         c.ID,
		KindLabel:        kindLabel(c.Kind),
		NameUnverified:   c.Kind != ClientStatic,
		RedirectHost:     redirectHost(req.redirectURI),
		RedirectURI:      req.redirectURI,
		LocalhostWarning: clientmeta.LocalhostOnly(c.RedirectURIs),
		Scopes:           req.scopes,
		Resources:        req.resources,
		DefaultResource:  s.tokens.defaultResource,
		Action:           s.cfg.issuerPath + pathConsent,
		RequestID:        id,
		CSRFToken:        csrf,
		Issuer:           s.cfg.Issuer,
		StylesheetURL:    s.cfg.issuerPath + pathAssets,
		UpstreamHost:     upstreamHost,
		ChooseUpstream:   s.login != nil && s.login.chosen(req) == nil && req.subject == "",
		UserCode:         req.userCode,
	}
	if req.device != "" {
		v.LocalhostWarning = false
	}
	if c.Kind == ClientMetadataDocument {
		if u, err := url.Parse(c.ID); err == nil {
			v.ClientHost = u.Host
		}
	}
	s.writePage(w, http.StatusOK, "consent.html", v, formActions)
}

func kindLabel(k ClientKind) string {
	switch k {
	case ClientStatic:
		return "Registered by the operator of this server"
	case ClientDynamic:
		return "Registered itself dynamically (unverified)"
	default:
		return "Identified by its metadata document at this address"
	}
}

// redirectHost is what the user should recognise: the host (with port) of
// an http(s) redirect URI, or the scheme of a private-use one.
func redirectHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return u.Host
	}
	return u.Scheme + ":"
}

// formActionSource is the CSP source expression for the redirect target, so
// the 303 after the form POST may leave this origin.
func formActionSource(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return ""
	}
	src := u.Scheme + ":"
	if u.Scheme == "http" || u.Scheme == "https" {
		src = u.Scheme + "://" + u.Host
	}
	if strings.ContainsAny(src, " ;,'\"\t\r\n") {
		return ""
	}
	return src
}

// browserID returns the value of the consent cookie, setting a fresh one
// when the browser has none.
func (s *Server) browserID(w http.ResponseWriter, r *http.Request) string {
	name := s.cookieName(consentCookie)
	if v := cookieValue(r, name); len(v) == 43 {
		return v
	}
	v := randomToken(32)
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: v, Path: "/", HttpOnly: true, Secure: s.cfg.https,
		SameSite: http.SameSiteStrictMode, MaxAge: int((12 * time.Hour).Seconds()),
	})
	return v
}

// handleConsent receives the consent form (requirements AS-13, AS-14): it
// refuses cross-site posts, checks the CSRF token and the browser cookie,
// and answers with 303 to the client.
func (s *Server) handleConsent(w http.ResponseWriter, r *http.Request) {
	if !s.fromOwnPage(r) {
		s.renderError(w, r, http.StatusForbidden,
			oauthErr(oauthmeta.CodeAccessDenied, "the consent form was not submitted from this server's page"))
		return
	}
	form, err := httpform.Post(w, r, browserFormLimit)
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed form"))
		return
	}
	browser := cookieValue(r, s.cookieName(consentCookie))
	action := form.Get("action")
	if action != "approve" && action != "deny" {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "unknown action"))
		return
	}
	pa, err := s.store.Pending.TakePending(r.Context(), form.Get("request"), s.clock.Now(),
		pendingMatcher(form.Get("csrf_token"), browser))
	if errors.Is(err, ErrNotFound) {
		s.renderError(w, r, http.StatusForbidden,
			oauthErr(oauthmeta.CodeAccessDenied, "this consent request is unknown, expired, already answered, or from another browser"))
		return
	}
	if err != nil {
		s.renderStoreError(w, r, "taking a pending authorization failed", err)
		return
	}
	req := pa.request()
	if action == "deny" {
		s.advance(w, r, req, denied, false)
		return
	}
	if req.device == "" { // a device login is never remembered
		req.browser = s.approvingBrowser(w, r)
	}
	s.advance(w, r, req, approved, false)
}

// Remembered consent ([Config.RememberConsent]) skips the page only when
// the record of an earlier approval by the same user for the same client,
// redirect URI, scopes and resources meets a browser that both
//
//   - made this request as a top-level navigation from a page of this
//     server's own site ([navigatedFromOwnSite]), and
//   - approved that client and redirect URI on our consent page before: it
//     carries the rememberCookie set by that approval, whose hash the
//     record lists.
//
// Neither alone is enough. The cookie keeps an approval to the browsers
// it was made in (a new browser sees the page), but it is sent on requests
// an attacker composed; the fetch metadata says who composed the request.
//
// The attack this stops (FastMCP's GHSA-6x8h-498w-gv8c): a client whose
// metadata-document client_id is the same at every authorization server
// starts a login at a malicious one, which sends the browser to our
// /authorize with that client_id, the client's redirect URI and state, and
// a PKCE challenge of its own. Were the page skipped, our code would reach
// the client, which (not checking RFC 9207 "iss") hands it to the
// malicious server, which redeems it with its verifier. The code goes to a
// redirect URI the user did approve in this browser, so that approval is
// no defence by itself: what differs is who composed the request.
//
// Only the browser can tell who composed the request, and it does so
// reliably only for a navigation that started on our own site. One that
// another site starts is "cross-site", also through that site's redirect.
// But when the client opens the browser at the malicious server's
// authorization endpoint, the browser counts the whole chain, that
// server's redirect to us included, as the user's own navigation: "none",
// as for a typed URL, with SameSite=Strict cookies (browser_test.go,
// TestRememberedConsentInBrowser, shows both in Chromium). So "none" shows
// the page, as does a request without these headers (an old browser, or no
// browser), and with them every MCP client that opens the system browser
// at /authorize: remembered consent serves clients on this server's own
// site, such as a web application on a sibling host. Pages of that site
// are trusted as our own: one that sends browsers to our /authorize with
// parameters someone else chose (an open redirect on a sibling host)
// reopens the attack. Our own responses never do: no authorization
// response is sent to this server's own origin (see
// [Server.clientAndRedirect]).

// rememberCookie is the name of the cookie that binds remembered consents
// to the browser in which the user approved, without the __Host- prefix of
// [Server.cookieName]. SameSite=Strict: it serves only requests from our
// own site.
const rememberCookie = "mcpauth-remember"

// maxConsentBrowsers bounds the browsers a remembered consent lists; the
// oldest approval is forgotten first.
const maxConsentBrowsers = 8

// navigatedFromOwnSite reports whether the browser says r is a top-level
// navigation that started on this server's own origin or site (Fetch
// Metadata: Sec-Fetch-Site same-origin or same-site, Sec-Fetch-Mode
// navigate, Sec-Fetch-Dest document, each sent once). Anything else,
// "cross-site", "none" or no header, is false.
func navigatedFromOwnSite(r *http.Request) bool {
	one := func(name string) string {
		if v := r.Header.Values(name); len(v) == 1 {
			return v[0]
		}
		return ""
	}
	site := one("Sec-Fetch-Site")
	return (site == "same-origin" || site == "same-site") &&
		one("Sec-Fetch-Mode") == "navigate" && one("Sec-Fetch-Dest") == "document"
}

// rememberingBrowser returns the hash of r's remember cookie when a
// remembered consent may apply to r: RememberConsent is on, r is a
// navigation from our own site, and it carries the cookie. "" otherwise.
func (s *Server) rememberingBrowser(r *http.Request) string {
	if !s.cfg.RememberConsent || !navigatedFromOwnSite(r) {
		return ""
	}
	if v := cookieValue(r, s.cookieName(rememberCookie)); len(v) == 43 {
		return tokenKey(v)
	}
	return ""
}

// approvingBrowser returns the hash of the remember cookie of the browser
// that approved on our consent page, after setting the cookie (a fresh one
// when the browser has none) to live as long as the consent it records.
// "" when RememberConsent is off.
func (s *Server) approvingBrowser(w http.ResponseWriter, r *http.Request) string {
	if !s.cfg.RememberConsent {
		return ""
	}
	name := s.cookieName(rememberCookie)
	v := cookieValue(r, name)
	if len(v) != 43 {
		v = randomToken(32)
	}
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: v, Path: "/", HttpOnly: true, Secure: s.cfg.https,
		SameSite: http.SameSiteStrictMode, MaxAge: int(consentTTL.Seconds()),
	})
	return tokenKey(v)
}

// consentRemembered reports whether the user already approved at least
// req's scopes and resources for its client and redirect URI in the
// browser req.browser names. It is false without such a browser (see
// [Server.rememberingBrowser]).
func (s *Server) consentRemembered(ctx context.Context, req *authRequest) bool {
	if !s.cfg.RememberConsent || req.browser == "" {
		return false
	}
	c, err := s.store.Consents.Consent(ctx, s.userOf(req), req.client.ID)
	return err == nil && s.clock.Now().Before(c.ExpiresAt) && c.RedirectURI == req.redirectURI &&
		subset(req.scopes, c.Scopes) && subset(req.resources, c.Resources) && listsBrowser(c.Browsers, req.browser)
}

// listsBrowser reports, in constant time for each entry, whether hashes
// holds browser.
func listsBrowser(hashes []string, browser string) bool {
	found := 0
	for _, h := range hashes {
		found |= subtle.ConstantTimeCompare([]byte(h), []byte(browser))
	}
	return found == 1
}

// rememberConsent records that the user approved req in the browser
// req.browser names. The browsers of an earlier approval for the same
// client and redirect URI stay listed, up to maxConsentBrowsers.
func (s *Server) rememberConsent(ctx context.Context, req *authRequest) {
	if !s.cfg.RememberConsent || req.browser == "" {
		return
	}
	now := s.clock.Now()
	var browsers []string
	if old, err := s.store.Consents.Consent(ctx, s.userOf(req), req.client.ID); err == nil &&
		now.Before(old.ExpiresAt) && old.RedirectURI == req.redirectURI {
		browsers = slices.DeleteFunc(slices.Clone(old.Browsers), func(h string) bool { return h == req.browser })
	}
	browsers = append(browsers, req.browser)
	browsers = browsers[max(0, len(browsers)-maxConsentBrowsers):]
	err := s.store.Consents.SaveConsent(ctx, &Consent{
		Subject: s.userOf(req), ClientID: req.client.ID, RedirectURI: req.redirectURI,
		Scopes: req.scopes, Resources: req.resources, Browsers: browsers,
		GrantedAt: now, ExpiresAt: now.Add(consentTTL),
	})
	if err != nil {
		s.log.WarnContext(ctx, "saving consent failed", "err", err)
	}
}

// handleConsentCSS serves the page's stylesheet (no inline styles or
// scripts, so the CSP can forbid them).
func (s *Server) handleConsentCSS(w http.ResponseWriter, _ *http.Request) {
	css, err := templateFS.ReadFile("templates/consent.css")
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(css)
}
