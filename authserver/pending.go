package authserver

import (
	"crypto/subtle"
	"slices"
	"time"
)

// Limits of the consent step.
const (
	// MaxPendingAuthorizations bounds the authorization requests waiting on
	// the consent page, in each store that keeps them, since anyone can
	// start one: past the bound, the memory store pushes out the least
	// recently used request and the PostgreSQL store answers new ones with
	// temporarily_unavailable.
	MaxPendingAuthorizations = 10000
	// PendingTTL is how long a pending record lives: the server saves it
	// with an ExpiresAt PendingTTL ahead of its clock.
	PendingTTL = 10 * time.Minute
)

// The steps a request waits at ([PendingAuthorization.Step]).
const (
	stepConsent = "consent"
	stepChoose  = "choose"
	stepLogin   = "login"
)

// pendingRecord builds the stored form of req waiting on the consent
// page, bound to the form's CSRF token and the browser cookie.
func pendingRecord(id, csrf, browser string, req *authRequest, expires time.Time) *PendingAuthorization {
	return formRecord(stepConsent, id, csrf, browser, req, expires)
}

// formRecord builds the stored form of req waiting on one of our pages
// (step stepConsent or stepChoose), bound to the form's CSRF token and
// the browser cookie.
func formRecord(step, id, csrf, browser string, req *authRequest, expires time.Time) *PendingAuthorization {
	p := waitingRecord(id, step, browser, req, expires)
	p.CSRFHash = tokenKey(csrf)
	return p
}

// loginRecord builds the stored form of req waiting for the return from
// the login l at the provider, bound to its state and the browser's login
// cookie. consented records an approval on our page before the login.
func loginRecord(l *LoginRequest, browser string, req *authRequest, consented bool, expires time.Time) *PendingAuthorization {
	p := waitingRecord(loginPendingID(l.State), stepLogin, browser, req, expires)
	p.Nonce, p.Verifier, p.Consented, p.RememberBrowser = l.Nonce, l.Verifier, consented, req.browser
	return p
}

// waitingRecord is what every step's record holds of req.
func waitingRecord(id, step, browser string, req *authRequest, expires time.Time) *PendingAuthorization {
	return &PendingAuthorization{
		ID:              id,
		Step:            step,
		BrowserHash:     tokenKey(browser),
		Client:          cloneClient(req.client),
		RedirectURI:     req.redirectURI,
		RedirectURISent: req.redirectURISent,
		State:           req.state,
		Challenge:       req.challenge,
		Scopes:          req.scopes,
		Resources:       req.resources,
		Subject:         req.subject,
		UpstreamTokens:  req.upstreamTokens,
		Provider:        req.provider,
		LoginHint:       req.loginHint,
		DeviceCode:      req.device,
		ExpiresAt:       expires,
	}
}

// request returns the authorization request p holds.
func (p *PendingAuthorization) request() *authRequest {
	r := &authRequest{
		client:          p.Client,
		redirectURI:     p.RedirectURI,
		redirectURISent: p.RedirectURISent,
		state:           p.State,
		challenge:       p.Challenge,
		scopes:          p.Scopes,
		resources:       p.Resources,
		subject:         p.Subject,
		upstreamTokens:  p.UpstreamTokens,
		provider:        p.Provider,
		loginHint:       p.LoginHint,
		device:          p.DeviceCode,
	}
	if p.Step == stepChoose {
		r.consented = p.Consented
	}
	if p.Step == stepLogin || p.Step == stepChoose {
		r.browser = p.RememberBrowser
	}
	return r
}

// pendingMatcher returns a match function for [PendingStore.TakePending]
// that compares the hashes of the form's CSRF token and the browser
// cookie with the record's, in constant time.
func pendingMatcher(csrf, browser string) func(*PendingAuthorization) bool {
	return formMatcher(stepConsent, csrf, browser)
}

// formMatcher is pendingMatcher for the records of step.
func formMatcher(step, csrf, browser string) func(*PendingAuthorization) bool {
	c, b := []byte(tokenKey(csrf)), []byte(tokenKey(browser))
	return func(p *PendingAuthorization) bool {
		okC := subtle.ConstantTimeCompare([]byte(p.CSRFHash), c)
		okB := subtle.ConstantTimeCompare([]byte(p.BrowserHash), b)
		return okC&okB == 1 && browser != "" && p.Step == step
	}
}

func clonePending(p *PendingAuthorization) *PendingAuthorization {
	d := *p
	if p.Client != nil {
		d.Client = cloneClient(p.Client)
	}
	d.Scopes = slices.Clone(p.Scopes)
	d.Resources = slices.Clone(p.Resources)
	return &d
}
