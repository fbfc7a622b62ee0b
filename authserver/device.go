package authserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/internal/ratelimit"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DeviceConfig turns on the device authorization grant (RFC 8628) for
// hosts without a browser: the device authorization endpoint, the
// verification page at /device and the
// urn:ietf:params:oauth:grant-type:device_code grant, advertised in the
// metadata. A client may use it when its GrantTypes list that grant
// (Dynamic Client Registration and metadata documents may ask for it).
//
// The user types the user code on the verification page, or follows
// verification_uri_complete, which fills it in; either way the page asks
// for an explicit submission, then the request goes through the same
// consent page (always shown, whatever [Config.Consent] says but deny, and
// never skipped by a remembered consent) and the same login at
// [Config.Login], allow-list and grant policy as the browser flow.
//
// User codes are 8 letters of BCDFGHJKLMNPQRSTVWXZ (no vowels, no
// look-alikes), about 34.6 bits, shown as XXXX-XXXX and read without
// regard to case or dashes; device codes are 256 random bits; both are
// stored hashed. Wrong user codes are bounded per client address and
// across all addresses; every request to the page also counts against
// the browser rate limit ([RateLimit.PerIPBrowser]), and so does each
// device authorization request, which bounds the codes one address can
// hold.
type DeviceConfig struct {
	// CodeTTL is how long a device code and its user code live. Zero
	// means 10 minutes; at most 30 minutes.
	CodeTTL time.Duration
	// Interval is the minimum time between two polls of the token
	// endpoint, in whole seconds. Zero means 5 seconds.
	Interval time.Duration
	// FailedLookupsPerIP is how many wrong user codes one client address
	// may enter per minute (and at once). Zero means 5.
	FailedLookupsPerIP int
	// FailedLookups is how many wrong user codes all addresses together
	// may enter per minute (and at once). Past it the page refuses every
	// lookup, right or wrong, until the budget refills: a flood of
	// guesses delays users but cannot find their codes. Zero means 60.
	FailedLookups int
}

// Defaults and bounds of [DeviceConfig].
const (
	defaultDeviceCodeTTL  = 10 * time.Minute
	maxDeviceCodeTTL      = 30 * time.Minute
	defaultDeviceInterval = 5 * time.Second
	pathDevice            = "/device"
	pathDeviceAuthorize   = "/device_authorization"
)

// userCodeAlphabet is the RFC 8628 §6.1 example alphabet: consonants
// only, so no word can be spelled, and no 0/O or 1/I to confuse.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// userCodeLength: 20^8 ≈ 2^34.6 codes.
const userCodeLength = 8

// deviceFlow is the device authorization grant's state: its settings and
// the bounds on wrong user codes.
type deviceFlow struct {
	ttl      time.Duration
	interval int64 // seconds
	// failures counts wrong user codes per client address, global across
	// all of them.
	failures *limiterSet[netip.Addr]
	global   *ratelimit.Table[struct{}]
	clock    clock.Func
}

// newDeviceFlow validates c; nil without Config.Device.
func newDeviceFlow(c *DeviceConfig, now clock.Func, maxTracked int) (*deviceFlow, error) {
	if c == nil {
		return nil, nil
	}
	ttl := cmp.Or(c.CodeTTL, defaultDeviceCodeTTL)
	interval := cmp.Or(c.Interval, defaultDeviceInterval)
	perIP, global := cmp.Or(c.FailedLookupsPerIP, 5), cmp.Or(c.FailedLookups, 60)
	switch {
	case ttl < time.Minute || ttl > maxDeviceCodeTTL:
		return nil, configErr("Device.CodeTTL", "must be between 1 and 30 minutes")
	case interval < time.Second || interval%time.Second != 0 || interval >= ttl:
		return nil, configErr("Device.Interval", "must be whole seconds, at least 1, shorter than CodeTTL")
	case perIP < 1 || global < 1:
		return nil, configErr("Device.FailedLookups", "must be positive")
	}
	return &deviceFlow{
		ttl: ttl, interval: int64(interval / time.Second),
		failures: newLimiterSet[netip.Addr](float64(perIP)/60, perIP, maxTracked),
		global:   ratelimit.New[struct{}](ratelimit.Rate{PerSecond: float64(global) / 60, Burst: global}, 1),
		clock:    now,
	}, nil
}

// mayLookUp reports whether addr may look up a user code now: both of its
// budgets of wrong codes have one left. It spends nothing.
func (f *deviceFlow) mayLookUp(addr netip.Addr) bool {
	now := f.clock.Now()
	return f.global.Peek(struct{}{}, now) && f.failures.entries.Peek(addr, now)
}

// failed spends one wrong code of addr's budget and of the global one.
func (f *deviceFlow) failed(addr netip.Addr) {
	now := f.clock.Now()
	f.global.Allow(struct{}{}, now)
	f.failures.allow(addr, now)
}

// newUserCode draws a user code: userCodeLength letters of
// userCodeAlphabet, each uniformly (bytes of 240 and above are drawn
// again, so that the modulo has no bias).
func newUserCode() string {
	out := make([]byte, 0, userCodeLength)
	var b [1]byte
	for len(out) < userCodeLength {
		_, _ = rand.Read(b[:])
		if b[0] >= 240 { // 240 = 12 × 20: keep the draw uniform
			continue
		}
		out = append(out, userCodeAlphabet[int(b[0])%len(userCodeAlphabet)])
	}
	return string(out)
}

// normalizeUserCode reads what the user typed: ASCII letters in any case,
// dashes and spaces ignored. ok is false for anything that cannot be a
// user code.
func normalizeUserCode(s string) (code string, ok bool) {
	if len(s) > 64 {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == ' ':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		if strings.IndexByte(userCodeAlphabet, c) < 0 {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), b.Len() == userCodeLength
}

// displayUserCode is how the code is shown: XXXX-XXXX.
func displayUserCode(code string) string {
	if len(code) != userCodeLength {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// deviceAuthorizationResponse is the RFC 8628 §3.2 answer.
type deviceAuthorizationResponse = oauthmeta.DeviceAuthorizationResponse

// handleDeviceAuthorization is the device authorization endpoint (RFC
// 8628 §3.1): the client authenticates as at the token endpoint (public
// clients with client_id alone), names its scope and resources, which are
// checked as at the authorization endpoint, and gets a device code and a
// user code.
func (s *Server) handleDeviceAuthorization(w http.ResponseWriter, r *http.Request) {
	front := s.token.front
	form, ok := front.form(w, r)
	if !ok {
		return
	}
	client, err := s.clients.authenticate(r.Context(), r, form, false)
	if err != nil {
		front.errs.write(w, r, err)
		return
	}
	if !front.limits.allowClient(w, client) {
		return
	}
	if !client.allowsGrant(oauthmeta.GrantTypeDeviceCode) {
		front.errs.write(w, r, oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not use the device authorization grant"))
		return
	}
	scopes, oe := s.scopes.grantable(client, form.Get("scope"))
	if oe != nil {
		front.errs.write(w, r, oe)
		return
	}
	var resources []string
	for _, res := range form["resource"] {
		if oe := s.resources.check(res); oe != nil {
			front.errs.write(w, r, oe)
			return
		}
		resources = appendNew(resources, res)
	}
	resp, err := s.issueDeviceCode(r.Context(), client, scopes, resources)
	if err != nil {
		front.errs.write(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "device authorization started", "client_id", client.ID)
	writeJSON(w, http.StatusOK, resp)
}

// issueDeviceCode saves a new pending device code for client and returns
// the answer naming it. A collision of either code (never expected) draws
// again, at most three times.
func (s *Server) issueDeviceCode(ctx context.Context, client *Client, scopes, resources []string) (*deviceAuthorizationResponse, error) {
	f := s.device
	now := s.clock.Now()
	for range 3 {
		device, user := randomToken(32), newUserCode()
		err := s.store.Devices.SaveDeviceCode(ctx, &DeviceCode{
			Key: tokenKey(device), UserCodeKey: tokenKey(user), ClientID: client.ID,
			Scopes: scopes, Resources: resources, Status: DevicePending, Interval: f.interval,
			IssuedAt: now, ExpiresAt: now.Add(f.ttl),
		})
		if errors.Is(err, ErrAlreadyUsed) {
			continue
		}
		if err != nil {
			return nil, err
		}
		page := s.cfg.endpoint(pathDevice)
		return &deviceAuthorizationResponse{
			DeviceCode: device, UserCode: displayUserCode(user), VerificationURI: page,
			VerificationURIComplete: page + "?" + url.Values{"user_code": {displayUserCode(user)}}.Encode(),
			ExpiresIn:               int64(f.ttl / time.Second), Interval: f.interval,
		}, nil
	}
	return nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "could not draw a unique code")
}

// deviceView is what the verification page shows.
type deviceView struct {
	Action, CSRFToken, UserCode, Error string
	Done, Denied                       bool
	ClientName                         string
	Issuer, StylesheetURL              string
}

// deviceFormCSRF is the page's CSRF token, derived from the browser's
// consent cookie (HttpOnly, SameSite=Strict): a form another site posts
// cannot carry it.
func deviceFormCSRF(browser string) string { return tokenKey("mcpauth device form\x00" + browser) }

// handleDevicePage shows the verification page (RFC 8628 §3.3): a form to
// type the user code, filled in from verification_uri_complete. Nothing
// happens before the user submits it.
func (s *Server) handleDevicePage(w http.ResponseWriter, r *http.Request) {
	code := ""
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil {
		if c, ok := normalizeUserCode(q.Get("user_code")); ok {
			code = displayUserCode(c)
		}
	}
	s.showDeviceForm(w, r, http.StatusOK, code, "")
}

func (s *Server) showDeviceForm(w http.ResponseWriter, r *http.Request, status int, code, problem string) {
	browser := s.browserID(w, r)
	s.writePage(w, status, "device.html", deviceView{
		Action: s.cfg.issuerPath + pathDevice, CSRFToken: deviceFormCSRF(browser), UserCode: code, Error: problem,
		Issuer: s.cfg.Issuer, StylesheetURL: s.cfg.issuerPath + pathAssets,
	}, "")
}

// handleDeviceSubmit receives the user code: from this server's page, with
// the CSRF token of this browser, within the budgets of wrong codes. A
// pending code's request then goes through the consent page and the
// login like any authorization request.
func (s *Server) handleDeviceSubmit(w http.ResponseWriter, r *http.Request) {
	if !s.fromOwnPage(r) {
		s.renderError(w, r, http.StatusForbidden,
			oauthErr(oauthmeta.CodeAccessDenied, "the form was not submitted from this server's page"))
		return
	}
	form, err := httpform.Post(w, r, browserFormLimit)
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed form"))
		return
	}
	browser := cookieValue(r, s.cookieName(consentCookie))
	if len(browser) != 43 || subtle.ConstantTimeCompare([]byte(form.Get("csrf_token")), []byte(deviceFormCSRF(browser))) != 1 {
		s.renderError(w, r, http.StatusForbidden,
			oauthErr(oauthmeta.CodeAccessDenied, "this form is stale or from another browser; reload the page"))
		return
	}
	addr := s.limits.bucketKey(r)
	if !s.device.mayLookUp(addr) {
		setRetryAfter(w, time.Minute)
		s.showDeviceForm(w, r, http.StatusTooManyRequests, "", "Too many wrong codes were entered. Wait a minute and try again.")
		return
	}
	typed := form.Get("user_code")
	d, err := s.lookUpUserCode(r.Context(), typed)
	if errors.Is(err, ErrNotFound) {
		s.device.failed(addr)
		s.log.InfoContext(r.Context(), "wrong or expired user code entered")
		s.showDeviceForm(w, r, http.StatusBadRequest, "", "This code is not valid. Check it on your device, or start again there.")
		return
	}
	if err != nil {
		s.renderStoreError(w, r, "looking up a user code failed", err)
		return
	}
	client, err := s.clients.lookup(r.Context(), d.ClientID)
	if err != nil {
		s.renderStoreError(w, r, "looking up the client of a device code failed", err)
		return
	}
	code, _ := normalizeUserCode(typed)
	req := &authRequest{client: client, scopes: d.Scopes, resources: d.Resources, device: d.Key,
		userCode: displayUserCode(code)}
	s.advance(w, r, req, authorized, false)
}

// lookUpUserCode finds the pending, unexpired device code of what the
// user typed; ErrNotFound otherwise.
func (s *Server) lookUpUserCode(ctx context.Context, typed string) (*DeviceCode, error) {
	code, ok := normalizeUserCode(typed)
	if !ok {
		return nil, ErrNotFound
	}
	d, err := s.store.Devices.DeviceCodeByUserCode(ctx, tokenKey(code))
	if err != nil {
		return nil, err
	}
	if d.Status != DevicePending || !s.clock.Now().Before(d.ExpiresAt) {
		return nil, ErrNotFound
	}
	return d, nil
}

// errDeviceAnswered: the device code was decided already (or expired).
var errDeviceAnswered = oauthErr(oauthmeta.CodeAccessDenied, "this code was already answered or has expired; start again on your device")

// answerDevice records the user's decision on req's device code and shows
// the page that tells the user to go back to the device.
func (s *Server) answerDevice(w http.ResponseWriter, r *http.Request, req *authRequest, approved bool) {
	now := s.clock.Now()
	_, err := s.store.Devices.UpdateDeviceCode(r.Context(), req.device, func(d *DeviceCode) error {
		if d.Status != DevicePending || !now.Before(d.ExpiresAt) {
			return errDeviceAnswered
		}
		d.Status = DeviceDenied
		if approved {
			d.Status, d.Subject, d.Scopes = DeviceApproved, s.userOf(req), req.scopes
			d.UpstreamTokens = req.upstreamTokens
			d.Refresh = req.client.allowsGrant(oauthmeta.GrantTypeRefreshToken)
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrNotFound):
		s.renderError(w, r, http.StatusForbidden, errDeviceAnswered)
		return
	case err != nil:
		s.renderStoreError(w, r, "recording a device decision failed", err)
		return
	}
	s.log.InfoContext(r.Context(), "device authorization answered", "client_id", req.client.ID, "approved", approved)
	s.writePage(w, http.StatusOK, "device.html", deviceView{
		Done: approved, Denied: !approved, ClientName: cmp.Or(req.client.Name, req.client.ID),
		Issuer: s.cfg.Issuer, StylesheetURL: s.cfg.issuerPath + pathAssets,
	}, "")
}

// deviceRefused ends a device login refused at any step (the user denied,
// the allow-list or grant policy refused, the provider failed): an
// access_denied is recorded on the device code, so the device stops
// polling; anything else leaves the code pending and shows the error.
func (s *Server) deviceRefused(w http.ResponseWriter, r *http.Request, req *authRequest, oe *oauthmeta.Error) {
	if oe.Code == oauthmeta.CodeAccessDenied {
		s.answerDevice(w, r, req, false)
		return
	}
	s.renderError(w, r, statusFor(oe.Code), oe)
}

// deviceGrant is the device code grant handler (RFC 8628 §3.4).
type deviceGrant struct {
	store  DeviceCodeStore
	grants GrantStore
	ledger *grantLedger
	clock  clock.Func
	codes  *codeGrant // for replayed and bindUpstreamTokens
	// accessTTL and refreshTTL are the lifetimes of a grant without and
	// with refresh tokens.
	accessTTL, refreshTTL time.Duration
}

// grant polls a device code (RFC 8628 §3.4, §3.5): bound to the client it
// was issued to, authorization_pending until the user answers, slow_down
// (and 5 more seconds of interval) when polled before the interval
// passed, expired_token after its lifetime, access_denied when the user
// or the login refused; an approved code is redeemed once, into a grant
// like an authorization code's, and a second redemption revokes that
// grant. A requested resource must be within the authorization.
func (h *deviceGrant) grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	dc := form.Get("device_code")
	if dc == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "device_code is required")
	}
	key := tokenKey(dc)
	rec, err := h.store.DeviceCode(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "unknown device code")
	}
	if err != nil {
		return nil, err
	}
	if rec.ClientID != client.ID {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "device code was issued to another client")
	}
	now := h.clock.Now()
	if !now.Before(rec.ExpiresAt) {
		return nil, oauthErr(oauthmeta.CodeExpiredToken, "device code expired")
	}
	resources, oe := narrowResources(rec.Resources, form["resource"])
	if oe != nil {
		return nil, oe
	}
	if rec.RedeemedBy != "" {
		return nil, h.replayed(ctx, rec.RedeemedBy)
	}
	var tooFast bool
	rec, err = h.store.UpdateDeviceCode(ctx, key, func(d *DeviceCode) error {
		tooFast = d.Poll(now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch rec.Status {
	case DeviceDenied:
		return nil, oauthErr(oauthmeta.CodeAccessDenied, "the user denied the request")
	case DeviceApproved:
	default:
		if tooFast {
			return nil, oauthErr(oauthmeta.CodeSlowDown, "polling too fast; interval is now "+strconv.FormatInt(rec.Interval, 10)+" s")
		}
		return nil, oauthErr(oauthmeta.CodeAuthorizationPending, "the user has not answered yet")
	}
	return h.redeem(ctx, client, key, rec, resources, now, jkt)
}

// redeem turns an approved code into a grant and its tokens, once.
func (h *deviceGrant) redeem(ctx context.Context, client *Client, key string, rec *DeviceCode, resources []string, now time.Time, jkt string) (*oauthmeta.TokenResponse, error) {
	grant := &Grant{
		ID: randomToken(16), ClientID: client.ID, Subject: rec.Subject,
		Scopes: rec.Scopes, Resources: rec.Resources, CreatedAt: now,
		ExpiresAt: now.Add(h.accessTTL), UpstreamTokens: rec.UpstreamTokens,
	}
	if client.public() {
		grant.DPoPJKT = jkt
	}
	if rec.Refresh {
		grant.ExpiresAt = now.Add(h.refreshTTL)
	}
	if err := h.grants.SaveGrant(ctx, grant); err != nil {
		return nil, err
	}
	var first string
	_, err := h.store.UpdateDeviceCode(ctx, key, func(d *DeviceCode) error {
		if d.RedeemedBy != "" {
			first = d.RedeemedBy
			return ErrAlreadyUsed
		}
		d.RedeemedBy = grant.ID
		return nil
	})
	if err != nil {
		_ = h.grants.RevokeGrant(ctx, grant.ID)
		if errors.Is(err, ErrAlreadyUsed) {
			return nil, h.replayed(ctx, first)
		}
		return nil, err
	}
	h.codes.bindUpstreamTokens(ctx, grant)
	return h.ledger.issue(ctx, grant, rec.Scopes, resources, rec.Refresh, now, jkt)
}

// replayed revokes the grant of the first redemption, as for a replayed
// authorization code.
func (h *deviceGrant) replayed(ctx context.Context, grantID string) error {
	h.codes.log.WarnContext(ctx, "device code used twice; revoking the grant it produced")
	if err := h.ledger.revoke(ctx, grantID); err != nil {
		return err
	}
	return oauthErr(oauthmeta.CodeInvalidGrant, "device code was already used")
}

// startsByIP wraps the device authorization endpoint with the browser
// endpoints' per-address bucket, answered in JSON: each request saves a
// device code for CodeTTL, as each consent page saves a pending
// authorization, so one address holds as few of either.
func (l *rateLimits) startsByIP(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.browser.allow(l.bucketKey(r), l.now.Now()); !ok {
			writeRateLimited(w, wait)
			return
		}
		next(w, r)
	}
}
