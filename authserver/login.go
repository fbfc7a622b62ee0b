package authserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// The browser login is one state machine: a valid authorization request,
// the answer on the consent page, the choice among several providers and
// the return from the identity provider are its events, and next alone
// decides what follows each one: a refusal sent to the client, the
// consent page, the choice page, the login at the provider, or our code
// sent to the client. The handlers (handleAuthorize, handleConsent,
// handleChoose, handleUpstreamCallback) only parse and check their input.
// Between two steps the request waits in the PendingStore, in one
// single-use record per step, named by its Step: a consent or choice
// page's record, bound to its form and the browser (formRecord,
// formMatcher), or a login's at the provider, bound to its state and the
// browser (loginRecord, finishLogin).

// loginEvent is what happened to an authorization request.
type loginEvent int

const (
	// authorized: a valid authorization request arrived.
	authorized loginEvent = iota
	// approved and denied: the user answered on our consent page.
	approved
	denied
	// loggedIn: the provider authenticated an admitted user; consented
	// says whether they approved the request on our page before.
	loggedIn
	// chose: the user chose one of several providers on our page (or
	// typed an address of its home realm); consented as for loggedIn.
	chose
)

// loginStep is what the server does next with an authorization request.
type loginStep int

const (
	// refuse redirects access_denied to the client.
	refuse loginStep = iota
	// askConsent shows the consent page.
	askConsent
	// logInUpstream sends the browser to the provider; consented records
	// whether the user approved the request already.
	logInUpstream
	// chooseUpstream shows the page choosing among several providers;
	// consented as for logInUpstream.
	chooseUpstream
	// issue redirects a code to the client; remember first records the
	// approval for later requests (see rememberConsent).
	issue
)

// step is next's decision.
type step struct {
	do        loginStep
	consented bool // logInUpstream, chooseUpstream: the user approved on our page
	remember  bool // issue: record the approval
}

// next decides what follows ev for req. consented is the login's record
// of an approval on our page (loggedIn only).
func (s *Server) next(ctx context.Context, req *authRequest, ev loginEvent, consented bool) step {
	switch ev {
	case denied:
		return step{do: refuse}
	case approved:
		if s.login != nil && req.subject == "" {
			// Approved on our page, in this browser: now the user logs in
			// at the provider, with a state bound to the same browser
			// (after choosing it, when there are several).
			return s.toUpstream(req, true)
		}
		return step{do: issue, remember: true}
	case loggedIn:
		switch {
		case consented:
			return step{do: issue, remember: true}
		case s.consentRemembered(ctx, req):
			return step{do: issue}
		}
		return step{do: askConsent}
	case chose:
		return step{do: logInUpstream, consented: consented}
	}
	// authorized: the consent mode decides. With RememberConsent, the page
	// is skipped only for a browser that may use a remembered consent (see
	// rememberingBrowser); every other request gets the page first, before
	// any login at the provider.
	switch {
	case s.cfg.Consent == ConsentDeny:
		return step{do: refuse}
	case req.device != "":
		// A device login always shows the page: the user confirms there
		// the client and the code the device shows (RFC 8628 §5.4).
		return step{do: askConsent}
	case s.cfg.Consent == ConsentAuto:
		return step{do: issue}
	case req.browser == "":
		return step{do: askConsent}
	case s.login != nil:
		// The user is known only after the login, so the remembered
		// consent is checked at the callback.
		return s.toUpstream(req, false)
	case s.consentRemembered(ctx, req):
		return step{do: issue}
	}
	return step{do: askConsent}
}

// toUpstream is the way to the provider of req: its login, or first the
// choice of one of several.
func (s *Server) toUpstream(req *authRequest, consented bool) step {
	if s.login.chosen(req) == nil {
		return step{do: chooseUpstream, consented: consented}
	}
	return step{do: logInUpstream, consented: consented}
}

// advance takes the step next decides for ev.
func (s *Server) advance(w http.ResponseWriter, r *http.Request, req *authRequest, ev loginEvent, consented bool) {
	switch st := s.next(r.Context(), req, ev, consented); st.do {
	case refuse:
		s.redirectError(w, r, req, oauthErr(oauthmeta.CodeAccessDenied, "the user denied the request"))
	case askConsent:
		s.showConsent(w, r, req)
	case logInUpstream:
		s.startLogin(w, r, req, st.consented)
	case chooseUpstream:
		s.showChoice(w, r, req, st.consented, "", "")
	case issue:
		if st.remember && req.device == "" {
			s.rememberConsent(r.Context(), req)
		}
		s.approve(w, r, req)
	}
}

// loginBroker is the login at the provider of Config.Login, or at the
// several of Config.Logins, with who may log in and what they may obtain.
type loginBroker struct {
	// providers are the providers, in the order of the choice page: the
	// one of Config.Login, named "", or those of Config.Logins.
	providers []*brokerProvider
	// named says the providers are Config.Logins: each has its own
	// callback path, and the user chooses among them.
	named bool
	// realms maps a lower-case email domain to its provider
	// (Config.HomeRealms); nil without.
	realms map[string]*brokerProvider
	// policy is the grant policy that refresh and the token exchange
	// apply; nil without a GrantPolicy (or when a provider has none).
	policy *compiledGrantPolicy
}

// brokerProvider is one provider of the broker, with who may log in
// through it and what they may obtain.
type brokerProvider struct {
	name, label string
	provider    Login
	allow       *allowRules
	policy      *compiledGrantPolicy // nil without a GrantPolicy
	// unverifiedEmail is Allow.InsecureAllowUnverifiedEmail.
	unverifiedEmail bool
}

// newLoginBroker validates the login's configuration; nil without
// Config.Login or Config.Logins.
func newLoginBroker(cfg *settings) (*loginBroker, error) {
	if len(cfg.Logins) > 0 || cfg.HomeRealms != nil {
		return newNamedBroker(cfg)
	}
	if cfg.Login == nil {
		switch {
		case !cfg.Allow.empty() || cfg.Allow.AllowAnyUser:
			return nil, configErr("Allow", "needs Login")
		case cfg.GrantPolicy != nil:
			return nil, configErr("GrantPolicy", "needs Login")
		}
		return nil, nil
	}
	if cfg.Consent == ConsentAuto {
		return nil, configErr("Consent", "must show the consent page (or deny) when users log in upstream")
	}
	p, err := newBrokerProvider("Allow", "", cfg.Login, &cfg.Allow, cfg.GrantPolicy, cfg.Scopes)
	if err != nil {
		return nil, err
	}
	return &loginBroker{providers: []*brokerProvider{p}, policy: p.policy}, nil
}

// newBrokerProvider validates one provider's allow-list and grant policy;
// field names the allow-list in errors.
func newBrokerProvider(field, name string, l Login, a *AllowList, gp *GrantPolicy, scopes []string) (*brokerProvider, error) {
	if a.empty() && !a.AllowAnyUser {
		return nil, configErr(field, "name the email domains, users or groups who may log in, or set AllowAnyUser")
	}
	allow, err := compileAllowList(a)
	if err != nil {
		return nil, err
	}
	policy, err := compileGrantPolicy(gp, scopes)
	if err != nil {
		return nil, err
	}
	return &brokerProvider{name: name, provider: l, allow: allow, policy: policy,
		unverifiedEmail: a.InsecureAllowUnverifiedEmail}, nil
}

// currentPolicy returns the grant policy in force, nil without one (or
// without a login). Refresh and the token exchange call it at each
// request.
func (b *loginBroker) currentPolicy() *compiledGrantPolicy {
	if b == nil {
		return nil
	}
	return b.policy
}

// Limits of the login at the provider.
const (
	// loginTTL is how long a login's state stays redeemable: logins in
	// progress are kept in the PendingStore, whose stores expect the
	// consent page's lifetime.
	loginTTL = PendingTTL
	// pathUpstreamCallback is the fixed redirect URI path under the issuer.
	pathUpstreamCallback = "/upstream/callback"
)

// upstreamCookie is the name of the login's browser binding cookie,
// without the __Host- prefix of [Server.cookieName]. Unlike the consent
// cookie it is SameSite=Lax: the callback is a top-level navigation from
// the provider's site, on which browsers do not send SameSite=Strict
// cookies.
const upstreamCookie = "mcpauth-upstream"

// upstreamBrowserID returns this browser's login binding cookie, a fresh
// one when it has none. The cookie is set again either way, so it outlives
// the login starting now even when an earlier login set it.
func (s *Server) upstreamBrowserID(w http.ResponseWriter, r *http.Request) string {
	v := cookieValue(r, s.cookieName(upstreamCookie))
	if len(v) != 43 {
		v = randomToken(32)
	}
	http.SetCookie(w, &http.Cookie{
		Name: s.cookieName(upstreamCookie), Value: v, Path: "/", HttpOnly: true, Secure: s.cfg.https,
		SameSite: http.SameSiteLaxMode, MaxAge: int(loginTTL.Seconds()),
	})
	return v
}

// startLogin sends the browser to the provider of req (the only one, or
// the one chosen). The state, nonce and PKCE verifier are fresh and
// random; the state is single-use, expires after loginTTL and is bound to
// this browser by a cookie set now, with the consent. consented records
// that the user already approved req on our consent page.
func (s *Server) startLogin(w http.ResponseWriter, r *http.Request, req *authRequest, consented bool) {
	p := s.login.chosen(req)
	if p == nil { // next shows the choice page first
		s.renderError(w, r, http.StatusInternalServerError, oauthErr(oauthmeta.CodeServerError, "internal error"))
		return
	}
	l := &LoginRequest{State: randomToken(32), Nonce: randomToken(32), Verifier: oauth2.GenerateVerifier(),
		RedirectURI: s.callbackURL(p), LoginHint: req.loginHint}
	target, err := p.provider.Start(r.Context(), l)
	if err != nil {
		s.upstreamUnavailable(w, r, err)
		return
	}
	browser := s.upstreamBrowserID(w, r)
	req.provider = p.name
	rec := loginRecord(l, browser, req, consented, s.clock.Now().Add(loginTTL))
	if err := s.store.Pending.SavePending(r.Context(), rec); err != nil {
		s.renderStoreError(w, r, "saving an upstream login failed", err)
		return
	}
	redirect(w, r, target)
}

// upstreamUnavailable answers with a page when the provider cannot be
// reached or answers nonsense: the user sees why, nothing hangs.
func (s *Server) upstreamUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.log.WarnContext(r.Context(), "upstream identity provider unavailable", "err", err)
	s.renderError(w, r, http.StatusBadGateway, oauthErr(oauthmeta.CodeTemporarilyUnavailable,
		"the identity provider could not be reached or gave an invalid answer; try again later"))
}

// handleUpstreamCallback is the redirect URI registered at the provider
// (for one of several, at its own path: see callbackFor): it checks the
// query's shape and hands it to finishLogin, or to finishConnectLogin
// for the login of a connect page (connect_page.go), which needs the one
// provider of Config.Login.
func (s *Server) handleUpstreamCallback(w http.ResponseWriter, r *http.Request) {
	s.callbackFor(s.login.providers[0])(w, r)
}

// callbackFor is the handler of p's redirect URI.
func (s *Server) callbackFor(p *brokerProvider) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil || len(q["state"]) != 1 || len(q["code"]) > 1 || len(q["iss"]) > 1 {
			s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed callback"))
			return
		}
		if !s.login.named && s.connect != nil && s.finishConnectLogin(w, r, q) {
			return // the login of a connect page (connect_page.go)
		}
		s.finishLogin(w, r, p, q)
	}
}

// finishLogin redeems the state of q (only in the browser that started the
// login, only once), checks that the answer came from the provider p the
// login went to, has p verify its answer, applies p's allow-list and grant
// policy, keeps the provider's tokens in the vault, and advances the
// request as logged in.
func (s *Server) finishLogin(w http.ResponseWriter, r *http.Request, p *brokerProvider, q url.Values) {
	ctx := r.Context()
	browser := cookieValue(r, s.cookieName(upstreamCookie))
	bh := []byte(tokenKey(browser))
	rec, err := s.store.Pending.TakePending(ctx, loginPendingID(q.Get("state")), s.clock.Now(),
		func(p *PendingAuthorization) bool {
			return p.Step == stepLogin && browser != "" && subtle.ConstantTimeCompare([]byte(p.BrowserHash), bh) == 1
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
	req := rec.request()
	if oe := s.login.mixUp(p, rec.Provider, q); oe != nil {
		// The login is spent: an answer meant for one provider never
		// reaches another's token endpoint.
		s.log.WarnContext(ctx, "upstream callback refused: the answer is not from the provider the login went to",
			"client_id", req.client.ID, "provider", rec.Provider, "callback", p.name)
		s.redirectError(w, r, req, oe)
		return
	}
	id, tok, err := p.provider.Callback(ctx, q, &LoginRequest{State: q.Get("state"), Nonce: rec.Nonce,
		Verifier: rec.Verifier, RedirectURI: s.callbackURL(p)})
	if err != nil {
		oe, ok := errors.AsType[*oauthmeta.Error](err)
		if !ok {
			oe = oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
		}
		s.log.WarnContext(ctx, "upstream login failed", "err", err)
		s.redirectError(w, r, req, oe)
		return
	}
	if oe := s.admit(ctx, req, p, id); oe != nil {
		s.redirectError(w, r, req, oe)
		return
	}
	req.subject = identity.Subject(id.Issuer, id.Subject)
	if req.upstreamTokens, err = s.keepUpstreamTokens(ctx, p, tok); err != nil {
		s.log.ErrorContext(ctx, "keeping the upstream tokens failed", "err", err)
		oe := oauthErr(oauthmeta.CodeServerError, "internal error")
		errors.As(err, &oe) // a store's temporarily_unavailable goes to the client as is
		s.redirectError(w, r, req, oe)
		return
	}
	s.log.InfoContext(ctx, "upstream login", "sub", req.subject, "client_id", req.client.ID, "provider", p.name)
	s.advance(w, r, req, loggedIn, rec.Consented)
}

// admit checks that the user id of provider p is in p's namespace, applies
// p's allow-list and the home realm of the user's email, and narrows req's
// scopes by p's grant policy; the error is for the MCP client's redirect.
func (s *Server) admit(ctx context.Context, req *authRequest, p *brokerProvider, id *UpstreamIdentity) *oauthmeta.Error {
	if oe := s.login.ownIssuer(p, id); oe != nil {
		s.log.WarnContext(ctx, "upstream user refused: the identity's issuer is another provider's",
			"client_id", req.client.ID, "provider", p.name)
		return oe
	}
	keys := keysOf(id, p.unverifiedEmail)
	if keys.emailRefused {
		s.log.InfoContext(ctx, "upstream email is not an accepted address: it matches no email rule", "client_id", req.client.ID)
	}
	if home := s.login.realmOf(keys.email); home != nil && home != p {
		s.log.InfoContext(ctx, "upstream user refused: the email's domain logs in at another provider",
			"client_id", req.client.ID, "provider", p.name, "home", home.name)
		return oauthErr(oauthmeta.CodeAccessDenied, "users of this email domain must sign in at "+home.title())
	}
	admitted := p.allow.admits(keys)
	if id.GroupsIncomplete && (!admitted && p.allow.rules.hasGroups() || p.policy.hasGroups()) {
		s.log.WarnContext(ctx, "upstream user refused: the provider did not list the user's groups, which a group rule needs",
			"client_id", req.client.ID, "reason", groupOverage)
		return oauthErr(oauthmeta.CodeAccessDenied, "the user's groups could not be read ("+groupOverage+")")
	}
	if !admitted {
		s.log.InfoContext(ctx, "upstream user refused by the allow-list", "client_id", req.client.ID)
		return oauthErr(oauthmeta.CodeAccessDenied, "this user may not use this server")
	}
	return p.policy.applyTo(ctx, s.log, req, keys)
}

// groupOverage is the reason a login is refused when the provider did not
// list the user's groups and a group rule could decide the login.
const groupOverage = "group overage: configure group filtering or app roles at the provider"

// hasGroups reports whether c names a group; false for a nil policy.
func (c *compiledGrantPolicy) hasGroups() bool { return c != nil && c.rules.hasGroups() }

// loginPendingID is the PendingStore key of the login with this state:
// the state itself is never stored.
func loginPendingID(state string) string { return "upstream." + tokenKey(state) }

// keepUpstreamTokens seals the tokens of a finished login at p into the
// vault, marked with p's issuer, and returns the record's ID for the authorization request; "" without a
// vault.
func (s *Server) keepUpstreamTokens(ctx context.Context, p *brokerProvider, tok *oauth2.Token) (string, error) {
	if s.vault == nil || tok == nil {
		return "", nil
	}
	return s.vault.Keep(ctx, p.provider.Issuer(), tok, s.clock.Now().Add(PendingTTL+s.cfg.CodeTTL))
}

// openVault validates the vault's configuration and opens it on the
// server's store of upstream tokens; nil without Config.Vault. The
// resource servers it names must be pre-registered.
func (s *Server) openVault() (Vault, error) {
	c := &s.cfg
	switch {
	case c.Vault == nil && (c.VaultAudience != "" || len(c.VaultResourceServers) > 0 && len(c.Connect) == 0):
		return nil, configErr("VaultAudience, VaultResourceServers", "need Vault (or Connect)")
	case c.Vault == nil:
		return nil, nil
	case s.login == nil:
		return nil, configErr("Vault", "needs Login")
	}
	for id, res := range c.VaultResourceServers {
		if err := s.clients.checkExchanger("VaultResourceServers", id, res); err != nil {
			return nil, err
		}
	}
	v, err := c.Vault(s.store.UpstreamTokens)
	if err == nil && v == nil {
		err = configErr("Vault", "returned no vault")
	}
	return v, err
}
