package authserver

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// LoginProvider is one of several identity providers users may log in at
// ([Config.Logins]).
type LoginProvider struct {
	// Name identifies the provider in our pages, in [Config.HomeRealms]
	// and in its redirect URI ([Server.UpstreamCallbackURLFor]): 1 to 32
	// lower-case ASCII letters, digits and hyphens, first a letter,
	// unique among the providers. Required.
	Name string
	// Label is the text of the provider's button on the choice page, at
	// most 64 characters. Empty means Name.
	Label string
	// Login is the provider. Its issuer ([Login.Issuer]) must differ from
	// every other provider's: it names the provider's users. Required.
	Login Login
	// Allow says who may log in through this provider, as [Config.Allow]
	// does for a single one: its rules match only this provider's users.
	Allow AllowList
	// GrantPolicy says which scopes this provider's users may obtain, as
	// [Config.GrantPolicy]. Nil means every scope the client may request.
	GrantPolicy *GrantPolicy
}

// Limits of several providers.
const (
	// maxLogins bounds Config.Logins: each is a button on one page.
	maxLogins = 32
	// maxLoginLabel bounds LoginProvider.Label, in characters.
	maxLoginLabel = 64
	// maxEmailField bounds the address typed on the choice page: an email
	// address has at most 254 octets.
	maxEmailField = 254
	// pathChoose receives the choice page's form.
	pathChoose = "/upstream/choose"
)

// loginName is the form of LoginProvider.Name.
var loginName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// newNamedBroker validates Config.Logins and Config.HomeRealms.
func newNamedBroker(cfg *settings) (*loginBroker, error) {
	switch {
	case len(cfg.Logins) == 0:
		return nil, configErr("HomeRealms", "needs Logins")
	case cfg.Login != nil:
		return nil, configErr("Login, Logins", "set one of them, not both")
	case len(cfg.Logins) > maxLogins:
		return nil, configErr("Logins", fmt.Sprintf("at most %d providers", maxLogins))
	case !cfg.Allow.empty() || cfg.Allow.AllowAnyUser || cfg.Allow.InsecureAllowUnverifiedEmail || cfg.GrantPolicy != nil:
		return nil, configErr("Allow, GrantPolicy", "with Logins, set them on each provider")
	case cfg.Consent == ConsentAuto:
		return nil, configErr("Consent", "must show the consent page (or deny) when users log in upstream")
	}
	b := &loginBroker{named: true}
	issuers := map[string]string{}
	for i, l := range cfg.Logins {
		field := fmt.Sprintf("Logins[%d]", i)
		switch {
		case !loginName.MatchString(l.Name):
			return nil, configErr(field+".Name", fmt.Sprintf("%.40q is not 1 to 32 lower-case letters, digits and hyphens, first a letter", l.Name))
		case b.byName(l.Name) != nil:
			return nil, configErr(field+".Name", fmt.Sprintf("%q appears twice", l.Name))
		case l.Login == nil:
			return nil, configErr(field+".Login", "is required")
		case !utf8.ValidString(l.Label) || utf8.RuneCountInString(l.Label) > maxLoginLabel || hasControl(l.Label):
			return nil, configErr(field+".Label", fmt.Sprintf("must be at most %d printable characters", maxLoginLabel))
		}
		iss := l.Login.Issuer()
		if iss == "" {
			return nil, configErr(field+".Login", "has no issuer")
		}
		if other, dup := issuers[iss]; dup {
			// One issuer is one namespace of users: two providers on it
			// could each vouch for the other's users.
			return nil, configErr(field+".Login", fmt.Sprintf("has the issuer of %q: each provider needs its own", other))
		}
		issuers[iss] = l.Name
		p, err := newBrokerProvider(field+".Allow", l.Name, l.Login, &l.Allow, l.GrantPolicy, cfg.Scopes)
		if err != nil {
			return nil, err
		}
		p.label = l.Label
		b.providers = append(b.providers, p)
	}
	if err := b.parseRealms(cfg.HomeRealms); err != nil {
		return nil, err
	}
	b.policy = refreshCeiling(b.providers)
	return b, nil
}

// parseRealms parses Config.HomeRealms: each domain strictly as an email
// domain of the allow-list, once whatever its ASCII case, to a provider
// that exists.
func (b *loginBroker) parseRealms(realms map[string]string) error {
	if len(realms) == 0 {
		return nil
	}
	b.realms = make(map[string]*brokerProvider, len(realms))
	for _, d := range slices.Sorted(maps.Keys(realms)) {
		domain, err := identity.ParseDomain(d)
		if err != nil {
			return configErr("HomeRealms", fmt.Sprintf("%.80q is not a domain name: %v", d, err))
		}
		if _, dup := b.realms[domain]; dup {
			return configErr("HomeRealms", fmt.Sprintf("%.80q appears twice", domain))
		}
		p := b.byName(realms[d])
		if p == nil {
			return configErr("HomeRealms", fmt.Sprintf("%.80q maps to %.40q, which is no provider of Logins", d, realms[d]))
		}
		b.realms[domain] = p
	}
	return nil
}

// refreshCeiling is the grant policy refresh and the token exchange apply
// with several providers, which do not know the grant's provider: the
// scopes any provider's policy allows anyone; nil when a provider has no
// policy, since its users may then have any scope.
func refreshCeiling(ps []*brokerProvider) *compiledGrantPolicy {
	c := &compiledGrantPolicy{rules: newIdentityRules[[]string]()}
	for _, p := range ps {
		if p.policy == nil {
			return nil
		}
		c.ceiling = appendNew(c.ceiling, p.policy.ceiling...)
	}
	return c
}

// hasControl reports whether s has a control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) })
}

// byName returns the provider named name, nil for none.
func (b *loginBroker) byName(name string) *brokerProvider {
	for _, p := range b.providers {
		if p.name == name {
			return p
		}
	}
	return nil
}

// chosen returns the provider req logs in at: the only one, or the one
// chosen for it; nil without a login or before the choice.
func (b *loginBroker) chosen(req *authRequest) *brokerProvider {
	switch {
	case b == nil:
		return nil
	case !b.named:
		return b.providers[0]
	case req.provider == "":
		return nil
	}
	return b.byName(req.provider)
}

// realmOf returns the provider of the home realm of email; nil when its
// domain maps to none (or there is no address).
func (b *loginBroker) realmOf(email identity.Email) *brokerProvider {
	if b == nil || b.realms == nil || email.IsZero() {
		return nil
	}
	return b.realms[email.Domain()]
}

// hinted returns the name of the provider whose home realm holds the
// address of the authorization request's login_hint, with the address
// (lower-cased); "" for none: a hint that is no address, or at an
// unmapped domain, only means the user chooses.
func (b *loginBroker) hinted(q url.Values) (name, email string) {
	if b == nil || b.realms == nil || len(q["login_hint"]) != 1 {
		return "", ""
	}
	e, err := identity.ParseEmail(q.Get("login_hint"))
	if p := b.realmOf(e); err == nil && p != nil {
		return p.name, e.String()
	}
	return "", ""
}

// mixUp checks that the answer q arrived at the callback of the provider p
// that the login recorded as its own, and that an "iss" in it (RFC 9207)
// names no other provider: a code of one provider never reaches another's
// token endpoint, where a malicious or compromised provider could redeem
// it (the mix-up attack, RFC 9700 §4.4). The provider's own check of "iss"
// follows in its Callback.
func (b *loginBroker) mixUp(p *brokerProvider, recorded string, q url.Values) *oauthmeta.Error {
	refused := oauthErr(oauthmeta.CodeAccessDenied, "the answer did not come from the identity provider the login went to")
	if p.name != recorded {
		return refused
	}
	if iss, sent := q["iss"]; sent {
		for _, o := range b.providers {
			if o != p && o.provider.Issuer() == iss[0] {
				return refused
			}
		}
	}
	return nil
}

// ownIssuer checks that the user id of p is not in another provider's
// namespace: the subject is made from the identity's issuer, which with
// several providers must never be another provider's.
func (b *loginBroker) ownIssuer(p *brokerProvider, id *UpstreamIdentity) *oauthmeta.Error {
	if !b.named {
		return nil
	}
	for _, o := range b.providers {
		if id.Issuer == "" || id.Subject == "" || (o != p && o.provider.Issuer() == id.Issuer) {
			return oauthErr(oauthmeta.CodeAccessDenied, "the identity provider vouched for a user that is not its own")
		}
	}
	return nil
}

// issuers returns the providers' issuer identifiers.
func (b *loginBroker) issuers() []string {
	out := make([]string, 0, len(b.providers))
	for _, p := range b.providers {
		out = append(out, p.provider.Issuer())
	}
	return out
}

// title is the provider's name for people.
func (p *brokerProvider) title() string { return cmp.Or(p.label, p.name) }

// UpstreamCallbackURLFor is the redirect URI to register at the provider
// named name of [Config.Logins]: the issuer followed by
// /upstream/callback/ and the name. Each provider has its own, so that an
// answer is always taken for the provider it came from. "" when there is
// no such provider.
func (s *Server) UpstreamCallbackURLFor(name string) string {
	if s.login == nil || !s.login.named || s.login.byName(name) == nil {
		return ""
	}
	return strings.TrimSuffix(s.cfg.Issuer, "/") + pathUpstreamCallback + "/" + name
}

// callbackURL is p's redirect URI.
func (s *Server) callbackURL(p *brokerProvider) string {
	if !s.login.named {
		return s.UpstreamCallbackURL()
	}
	return s.UpstreamCallbackURLFor(p.name)
}

// choiceView is the data of the choice page.
type choiceView struct {
	ClientName, Issuer, StylesheetURL string
	Action, RequestID, CSRFToken      string
	Providers                         []choiceButton
	Realms                            bool   // show the email field
	Email                             string // as typed, when it is shown again
	Message                           string
}

// choiceButton is one provider on the choice page.
type choiceButton struct{ Name, Label string }

// showChoice renders the page on which the user chooses the provider of
// req, bound to this browser by the consent cookie and to this form by a
// CSRF token; consented records an approval on our page before it. msg,
// with email, explains why an address typed on it chose nothing.
func (s *Server) showChoice(w http.ResponseWriter, r *http.Request, req *authRequest, consented bool, email, msg string) {
	// The form's answer redirects to the chosen provider: CSP form-action
	// must allow each provider's authorization endpoint.
	var formActions []string
	v := choiceView{
		ClientName: cmp.Or(req.client.Name, req.client.ID), Issuer: s.cfg.Issuer,
		StylesheetURL: s.cfg.issuerPath + pathAssets, Action: s.cfg.issuerPath + pathChoose,
		Realms: s.login.realms != nil, Email: email, Message: msg,
	}
	for _, p := range s.login.providers {
		endpoint, err := p.provider.AuthorizationEndpoint(r.Context())
		if err != nil {
			s.log.WarnContext(r.Context(), "upstream identity provider unavailable", "provider", p.name, "err", err)
		} else if src := formActionSource(endpoint); src != "" {
			formActions = append(formActions, src)
		}
		v.Providers = append(v.Providers, choiceButton{Name: p.name, Label: p.title()})
	}
	browser := s.browserID(w, r)
	id, csrf := randomToken(24), randomToken(24)
	rec := formRecord(stepChoose, id, csrf, browser, req, s.clock.Now().Add(PendingTTL))
	rec.Consented, rec.RememberBrowser = consented, req.browser
	if err := s.store.Pending.SavePending(r.Context(), rec); err != nil {
		s.renderStoreError(w, r, "saving a pending authorization failed", err)
		return
	}
	v.RequestID, v.CSRFToken = id, csrf
	s.writePage(w, http.StatusOK, "choose.html", v, strings.Join(slices.Compact(slices.Sorted(slices.Values(formActions))), " "))
}

// handleChoose receives the choice page's form: a provider's button, or
// an email address whose domain is a home realm. Like the consent form it
// must come from our page, in the browser it was shown to, once.
func (s *Server) handleChoose(w http.ResponseWriter, r *http.Request) {
	if !s.fromOwnPage(r) {
		s.renderError(w, r, http.StatusForbidden,
			oauthErr(oauthmeta.CodeAccessDenied, "the form was not submitted from this server's page"))
		return
	}
	form, err := httpform.Post(w, r, browserFormLimit)
	if err != nil || len(form["provider"]) > 1 || len(form["email"]) > 1 {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed form"))
		return
	}
	name, typed := form.Get("provider"), strings.TrimSpace(form.Get("email"))
	if len(typed) > maxEmailField {
		typed = typed[:maxEmailField] // no address is longer; shown again, it is refused
	}
	byEmail := form.Get("action") == "email"
	var chosen *brokerProvider
	if !byEmail {
		if chosen = s.login.byName(name); chosen == nil {
			s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "unknown identity provider"))
			return
		}
	}
	pa, err := s.store.Pending.TakePending(r.Context(), form.Get("request"), s.clock.Now(),
		formMatcher(stepChoose, form.Get("csrf_token"), cookieValue(r, s.cookieName(consentCookie))))
	if errors.Is(err, ErrNotFound) {
		s.renderError(w, r, http.StatusForbidden,
			oauthErr(oauthmeta.CodeAccessDenied, "this sign-in request is unknown, expired, already answered, or from another browser"))
		return
	}
	if err != nil {
		s.renderStoreError(w, r, "taking a pending authorization failed", err)
		return
	}
	req := pa.request()
	var home *brokerProvider
	var email identity.Email
	if typed != "" && s.login.realms != nil {
		var err error
		if email, err = identity.ParseEmail(typed); err != nil && byEmail {
			s.showChoice(w, r, req, req.consented, typed, "This is not an email address this server accepts.")
			return
		}
		home = s.login.realmOf(email)
	}
	switch {
	case byEmail && home == nil:
		s.showChoice(w, r, req, req.consented, typed, "No sign-in is set up for this email domain: choose where to sign in.")
		return
	case byEmail:
		chosen, req.loginHint = home, email.String()
	case home != nil && home != chosen:
		// The address typed names the user's home realm: another
		// provider would be refused after the login anyway.
		s.redirectError(w, r, req, oauthErr(oauthmeta.CodeAccessDenied, "users of this email domain must sign in at "+home.title()))
		return
	}
	req.provider = chosen.name
	s.advance(w, r, req, chose, req.consented)
}
