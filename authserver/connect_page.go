package authserver

import (
	"cmp"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// The connect page. A connect URI (/connect/NAME?ref=…) names a
// reference the token exchange made for one user, MCP client, resource
// server and provider. Opening it starts a login at Config.Login, bound
// to this browser, which says who is at the browser: only the user the
// reference was made for gets the confirmation page; anyone else is
// refused, the reference is burnt, and nothing is linked. The
// confirmation (a POST with a CSRF token, bound to the same browser)
// starts the provider's authorization code flow with a fresh state, nonce
// and PKCE verifier, bound to the browser and the reference; its
// callback redeems the reference once, has the provider redeem the code,
// and keeps the tokens sealed in the vault for the token exchange. Each
// step's ticket is single-use and lives at most as long as the reference.
// Disconnecting (/connect/NAME/disconnect) is the same login and
// confirmation, then deletes the account.

// connectView is what the connect pages show.
type connectView struct {
	Title, Lead                      string
	Form, Disconnect                 bool
	Provider, ProviderHost, User     string
	ClientName, ClientID, CallerName string
	Action, RequestID, CSRFToken     string
	Confirm, ConfirmLabel            string
	Issuer, StylesheetURL            string
}

// connectPage renders a connect page without a form.
func (s *Server) connectPage(w http.ResponseWriter, status int, title, lead string) {
	s.writePage(w, status, "connect.html", connectView{Title: title, Lead: lead,
		Issuer: s.cfg.Issuer, StylesheetURL: s.cfg.issuerPath + pathAssets}, "")
}

// connectRefused answers a refused step: nothing was linked.
func (s *Server) connectRefused(w http.ResponseWriter, lead string) {
	s.connectPage(w, http.StatusForbidden, "Nothing was connected", lead)
}

// handleConnect serves GET /connect/NAME?ref=… (connect) and GET
// /connect/NAME/disconnect: it checks the reference and sends the
// browser to Config.Login to learn who is at it.
func (s *Server) handleConnect(p *connectProvider, disconnect bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		now := s.clock.Now()
		t := &ConnectTicket{Kind: TicketLogin, Provider: p.name, Disconnect: disconnect}
		expires := now.Add(PendingTTL)
		if !disconnect {
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil || len(q["ref"]) != 1 {
				s.connectRefused(w, "This connect link is malformed. Go back to your application and try again.")
				return
			}
			ref, err := s.connect.store.ConnectTicket(ctx, refTicketPrefix+tokenKey(q.Get("ref")), now)
			if err != nil && !errors.Is(err, ErrNotFound) {
				s.renderStoreError(w, r, "reading a connect reference failed", err)
				return
			}
			if err != nil || ref.Kind != TicketRef || ref.Provider != p.name {
				s.log.InfoContext(ctx, "connect link refused: unknown, expired, used or for another provider", "provider", p.name)
				s.connectRefused(w, "This connect link is unknown, expired, already used, or for another service. "+
					"Go back to your application and try again.")
				return
			}
			t.Ref, t.Subject = ref.ID, ref.Subject
			expires = ref.ExpiresAt
		}
		l := &LoginRequest{State: randomToken(32), Nonce: randomToken(32), Verifier: oauth2.GenerateVerifier(),
			RedirectURI: s.UpstreamCallbackURL()}
		target, err := s.login.providers[0].provider.Start(ctx, l)
		if err != nil {
			s.upstreamUnavailable(w, r, err)
			return
		}
		t.ID = loginTicketPrefix + tokenKey(l.State)
		t.BrowserHash = tokenKey(s.upstreamBrowserID(w, r))
		t.Nonce, t.Verifier, t.ExpiresAt = l.Nonce, l.Verifier, expires
		if err := s.connect.store.SaveConnectTicket(ctx, t); err != nil {
			s.renderStoreError(w, r, "saving a connect login failed", err)
			return
		}
		redirect(w, r, target)
	}
}

// takeBrowserTicket redeems the ticket id if the browser r comes from
// started it (its login cookie) and match accepts it; ErrNotFound
// otherwise.
func (s *Server) takeBrowserTicket(r *http.Request, id string, match func(*ConnectTicket) bool) (*ConnectTicket, error) {
	browser := cookieValue(r, s.cookieName(upstreamCookie))
	bh := []byte(tokenKey(browser))
	return s.connect.store.TakeConnectTicket(r.Context(), id, s.clock.Now(), func(t *ConnectTicket) bool {
		return browser != "" && subtle.ConstantTimeCompare([]byte(t.BrowserHash), bh) == 1 && match(t)
	})
}

// finishConnectLogin handles the return from Config.Login of a connect
// login (the callback URL is the login's): false when q's state names
// none in this browser, so the authorization login handles it. The
// browser's user must be the reference's: anyone else is refused, the
// reference burnt and the attempt logged.
func (s *Server) finishConnectLogin(w http.ResponseWriter, r *http.Request, q url.Values) bool {
	ctx := r.Context()
	t, err := s.takeBrowserTicket(r, loginTicketPrefix+tokenKey(q.Get("state")),
		func(t *ConnectTicket) bool { return t.Kind == TicketLogin })
	if errors.Is(err, ErrNotFound) {
		return false
	}
	if err != nil {
		s.renderStoreError(w, r, "taking a connect login failed", err)
		return true
	}
	p := s.connect.providers[t.Provider]
	id, _, err := s.login.providers[0].provider.Callback(ctx, q, &LoginRequest{State: q.Get("state"), Nonce: t.Nonce,
		Verifier: t.Verifier, RedirectURI: s.UpstreamCallbackURL()})
	if err != nil || p == nil {
		s.log.WarnContext(ctx, "connect: the login failed", "err", err)
		s.connectRefused(w, "Signing you in failed. Go back to your application and try again.")
		return true
	}
	// Only the provider's tokens of the login identify the user: they
	// are not kept.
	if !s.login.providers[0].allow.admits(keysOf(id, s.login.providers[0].unverifiedEmail)) {
		s.log.InfoContext(ctx, "connect: user refused by the allow-list", "provider", p.name)
		s.connectRefused(w, "This user may not use this server.")
		return true
	}
	user := identity.Subject(id.Issuer, id.Subject)
	who := cmp.Or(id.Email, id.Name, id.Subject)
	if t.Disconnect {
		s.showConnectConfirm(w, r, p, &ConnectTicket{Disconnect: true, Provider: p.name, Subject: user,
			ExpiresAt: t.ExpiresAt}, who, nil)
		return true
	}
	ref, err := s.connect.store.ConnectTicket(ctx, t.Ref, s.clock.Now())
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.renderStoreError(w, r, "reading a connect reference failed", err)
		return true
	}
	if err != nil {
		s.connectRefused(w, "This connect link expired or was used meanwhile. Go back to your application and try again.")
		return true
	}
	if subtle.ConstantTimeCompare([]byte(user), []byte(ref.Subject)) != 1 {
		// Someone else's link: another user sent it, or this one was
		// meant for another account. Burn it and link nothing.
		_, _ = s.connect.store.TakeConnectTicket(ctx, ref.ID, s.clock.Now(), func(*ConnectTicket) bool { return true })
		s.log.WarnContext(ctx, "connect refused: the signed-in user is not the user the link was made for",
			"event", "connect_user_mismatch", "provider", p.name, "client_id", ref.ClientID, "caller", ref.Caller,
			"sub", ref.Subject, "browser_sub", user)
		s.connectRefused(w, "This link was made for another user, so nothing was connected to your account. "+
			"If someone sent you this link, do not follow such links; if you asked for it, sign in as the account you use in the application.")
		return true
	}
	s.showConnectConfirm(w, r, p, &ConnectTicket{Ref: ref.ID, Provider: p.name, Subject: user, ExpiresAt: ref.ExpiresAt}, who, ref)
	return true
}

// showConnectConfirm renders the confirmation form of t (a connect of
// ref, or a disconnect) for the signed-in user who, bound to this browser
// and to the form by a CSRF token.
func (s *Server) showConnectConfirm(w http.ResponseWriter, r *http.Request, p *connectProvider, t *ConnectTicket, who string, ref *ConnectTicket) {
	ctx := r.Context()
	v := connectView{Form: true, Disconnect: t.Disconnect, Provider: p.display, User: who,
		Issuer: s.cfg.Issuer, StylesheetURL: s.cfg.issuerPath + pathAssets,
		Action: s.cfg.issuerPath + pathConnectPrefix + p.name}
	formAction := ""
	if t.Disconnect {
		v.Title, v.Lead = "Disconnect "+p.display, "Disconnect your "+p.display+" account? Servers then can no longer act there as you."
		v.Action += pathDisconnect
		v.Confirm, v.ConfirmLabel = "disconnect", "Disconnect"
	} else {
		endpoint, err := p.login.AuthorizationEndpoint(ctx)
		if err != nil {
			s.upstreamUnavailable(w, r, err)
			return
		}
		formAction, v.ProviderHost = formActionSource(endpoint), redirectHost(endpoint)
		v.ClientName, v.ClientID, v.CallerName = s.clientName(r, ref.ClientID), ref.ClientID, s.clientName(r, ref.Caller)
		v.Title = "Connect " + p.display
		v.Lead = v.ClientName + " asks to use your " + p.display + " account. Next you sign in at " + p.display + " and choose what to allow."
		v.Confirm, v.ConfirmLabel = "connect", "Continue to "+p.display
	}
	id, csrf := randomToken(24), randomToken(24)
	t.ID, t.Kind, t.CSRFHash = confirmTicketPrefix+tokenKey(id), TicketConfirm, tokenKey(csrf)
	t.BrowserHash = tokenKey(cookieValue(r, s.cookieName(upstreamCookie)))
	if limit := s.clock.Now().Add(PendingTTL); limit.Before(t.ExpiresAt) {
		t.ExpiresAt = limit
	}
	if err := s.connect.store.SaveConnectTicket(ctx, t); err != nil {
		s.renderStoreError(w, r, "saving a connect confirmation failed", err)
		return
	}
	v.RequestID, v.CSRFToken = id, csrf
	s.writePage(w, http.StatusOK, "connect.html", v, formAction)
}

// clientName is the name of the client id to show, its ID when it has
// none or cannot be looked up.
func (s *Server) clientName(r *http.Request, id string) string {
	if c, err := s.clients.lookup(r.Context(), id); err == nil && c.Name != "" {
		return c.Name
	}
	return id
}

// handleConnectConfirm receives the confirmation form (POST
// /connect/NAME and /connect/NAME/disconnect): it refuses cross-site
// posts, checks the CSRF token and the browser, then disconnects, or
// sends the browser to the provider with a fresh state, nonce and PKCE
// verifier bound to this browser and the reference.
func (s *Server) handleConnectConfirm(p *connectProvider, disconnect bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if !s.fromOwnPage(r) {
			s.connectRefused(w, "The form was not submitted from this server's page.")
			return
		}
		form, err := httpform.Post(w, r, browserFormLimit)
		if err != nil {
			s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed form"))
			return
		}
		want := map[bool]string{true: "disconnect", false: "connect"}[disconnect]
		action := form.Get("action")
		if action != want && action != "cancel" {
			s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "unknown action"))
			return
		}
		csrf := []byte(tokenKey(form.Get("csrf_token")))
		t, err := s.takeBrowserTicket(r, confirmTicketPrefix+tokenKey(form.Get("request")), func(t *ConnectTicket) bool {
			return t.Kind == TicketConfirm && t.Provider == p.name && t.Disconnect == disconnect &&
				subtle.ConstantTimeCompare([]byte(t.CSRFHash), csrf) == 1
		})
		if errors.Is(err, ErrNotFound) {
			s.connectRefused(w, "This page is unknown, expired, already answered, or was opened in another browser.")
			return
		}
		if err != nil {
			s.renderStoreError(w, r, "taking a connect confirmation failed", err)
			return
		}
		switch {
		case action == "cancel":
			if t.Ref != "" {
				_, _ = s.connect.store.TakeConnectTicket(ctx, t.Ref, s.clock.Now(), func(*ConnectTicket) bool { return true })
			}
			s.connectPage(w, http.StatusOK, "Cancelled", "Nothing was changed. You can close this page.")
		case disconnect:
			if err := s.connect.disconnect(ctx, t.Subject, p.name); err != nil {
				s.renderStoreError(w, r, "disconnecting an account failed", err)
				return
			}
			s.connectPage(w, http.StatusOK, p.display+" disconnected", "Your "+p.display+" account is no longer connected. You can close this page.")
		default:
			s.startConnect(w, r, p, t)
		}
	}
}

// startConnect sends the browser to the provider for the confirmed
// connect t.
func (s *Server) startConnect(w http.ResponseWriter, r *http.Request, p *connectProvider, t *ConnectTicket) {
	ctx := r.Context()
	ref, err := s.connect.store.ConnectTicket(ctx, t.Ref, s.clock.Now())
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.renderStoreError(w, r, "reading a connect reference failed", err)
		return
	}
	if err != nil {
		s.connectRefused(w, "This connect link expired or was used meanwhile. Go back to your application and try again.")
		return
	}
	l := &LoginRequest{State: randomToken(32), Nonce: randomToken(32), Verifier: oauth2.GenerateVerifier(),
		RedirectURI: s.ConnectCallbackURL()}
	target, err := p.login.Start(ctx, l)
	if err != nil {
		s.upstreamUnavailable(w, r, err)
		return
	}
	err = s.connect.store.SaveConnectTicket(ctx, &ConnectTicket{
		ID: authorizeTicketPrefix + tokenKey(l.State), Kind: TicketAuthorize, Ref: ref.ID, Provider: p.name,
		Subject: t.Subject, BrowserHash: t.BrowserHash, Nonce: l.Nonce, Verifier: l.Verifier, ExpiresAt: ref.ExpiresAt,
	})
	if err != nil {
		s.renderStoreError(w, r, "saving a connect authorization failed", err)
		return
	}
	redirect(w, r, target)
}

// handleConnectCallback is the redirect URI registered at every connect
// provider: it redeems the state (only in the browser that confirmed, only
// once), then the reference (once), has the provider check its answer
// (iss) and redeem the code with the verifier, and keeps the tokens.
func (s *Server) handleConnectCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q["state"]) != 1 || len(q["code"]) > 1 || len(q["iss"]) > 1 {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed callback"))
		return
	}
	t, err := s.takeBrowserTicket(r, authorizeTicketPrefix+tokenKey(q.Get("state")),
		func(t *ConnectTicket) bool { return t.Kind == TicketAuthorize })
	if errors.Is(err, ErrNotFound) {
		s.log.InfoContext(ctx, "connect callback refused: unknown, expired or used state, or another browser", "event", "connect_state_refused")
		s.connectRefused(w, "This answer is unknown, expired, already used, or was started in another browser.")
		return
	}
	if err != nil {
		s.renderStoreError(w, r, "taking a connect authorization failed", err)
		return
	}
	p := s.connect.providers[t.Provider]
	ref, err := s.connect.store.TakeConnectTicket(ctx, t.Ref, s.clock.Now(), func(ref *ConnectTicket) bool {
		return ref.Kind == TicketRef && ref.Provider == t.Provider && ref.Subject == t.Subject
	})
	if err != nil || p == nil {
		if !errors.Is(err, ErrNotFound) && err != nil {
			s.renderStoreError(w, r, "taking a connect reference failed", err)
			return
		}
		s.connectRefused(w, "This connect link expired or was used meanwhile. Go back to your application and try again.")
		return
	}
	g, err := s.connect.grants.Grant(ctx, ref.GrantID)
	if err != nil || g.Revoked || !s.clock.Now().Before(g.ExpiresAt) {
		if err != nil && !errors.Is(err, ErrNotFound) {
			s.renderStoreError(w, r, "reading a grant failed", err)
			return
		}
		s.connectRefused(w, "The application's access to this server ended meanwhile. Sign in to it again.")
		return
	}
	_, tok, err := p.login.Callback(ctx, q, &LoginRequest{State: q.Get("state"), Nonce: t.Nonce, Verifier: t.Verifier,
		RedirectURI: s.ConnectCallbackURL()})
	if err != nil || tok == nil || tok.AccessToken == "" {
		s.log.WarnContext(ctx, "connect: the provider's answer was refused", "provider", p.name, "err", err)
		s.connectRefused(w, p.display+" did not authorize the connection, or its answer could not be verified.")
		return
	}
	if err := s.connect.keep(ctx, p, g, tok); err != nil {
		s.renderStoreError(w, r, "keeping connected tokens failed", err)
		return
	}
	s.log.InfoContext(ctx, "third-party account connected", "provider", p.name, "client_id", g.ClientID, "caller", ref.Caller, "sub", g.Subject)
	s.connectPage(w, http.StatusOK, p.display+" connected",
		"Your "+p.display+" account is connected. Return to your application; you can close this page.")
}
