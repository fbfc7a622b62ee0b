package authserver

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// routes builds the router. This is the only file that knows about
// gorilla/mux; nothing of it is visible outside the package.
func (s *Server) routes() http.Handler {
	return commonHeaders(matched{s.router()})
}

// router registers every endpoint. No route has variables (see matched).
func (s *Server) router() *mux.Router {
	r := mux.NewRouter()
	r.SkipClean(true) // never answer with a redirect to a cleaned path
	p := s.cfg.issuerPath
	get := []string{http.MethodGet, http.MethodHead}
	browser := func(h http.HandlerFunc) http.HandlerFunc { return s.limits.browserByIP(h, s.renderError) }

	// The well-known suffix goes before the issuer path (RFC 8414 §3.1).
	r.Path(oauthmeta.WellKnownOAuthAuthorizationServer + p).Methods(get...).HandlerFunc(s.discovery.handleMetadata)
	r.Path(oauthmeta.WellKnownOpenIDConfiguration + p).Methods(get...).HandlerFunc(s.discovery.handleMetadata)
	if p != "" {
		r.Path(p + oauthmeta.WellKnownOpenIDConfiguration).Methods(get...).HandlerFunc(s.discovery.handleMetadata)
	}
	r.Path(p + pathJWKS).Methods(get...).HandlerFunc(s.discovery.handleJWKS)
	r.Path(p + pathAuthorize).Methods(http.MethodGet).HandlerFunc(browser(s.handleAuthorize)) // GET only: it has side effects
	r.Path(p + pathConsent).Methods(http.MethodPost).HandlerFunc(browser(s.handleConsent))
	r.Path(p + pathAssets).Methods(get...).HandlerFunc(s.handleConsentCSS)
	if s.login != nil && !s.login.named {
		r.Path(p + pathUpstreamCallback).Methods(get...).HandlerFunc(s.observed(EndpointUpstreamCallback, browser(s.handleUpstreamCallback)))
	}
	if s.login != nil && s.login.named {
		for _, up := range s.login.providers {
			r.Path(p + pathUpstreamCallback + "/" + up.name).Methods(get...).HandlerFunc(s.observed(EndpointUpstreamCallback, browser(s.callbackFor(up))))
		}
		r.Path(p + pathChoose).Methods(http.MethodPost).HandlerFunc(browser(s.handleChoose))
	}
	if s.device != nil {
		r.Path(p + pathDeviceAuthorize).Methods(http.MethodPost).HandlerFunc(s.limits.startsByIP(s.handleDeviceAuthorization))
		r.Path(p + pathDevice).Methods(get...).HandlerFunc(browser(s.handleDevicePage))
		r.Path(p + pathDevice).Methods(http.MethodPost).HandlerFunc(browser(s.handleDeviceSubmit))
	}
	if s.connect != nil {
		r.Path(p + pathConnectCallback).Methods(get...).HandlerFunc(browser(s.handleConnectCallback))
		for _, name := range s.connect.names {
			cp, page := s.connect.providers[name], p+pathConnectPrefix+name
			r.Path(page).Methods(http.MethodGet).HandlerFunc(browser(s.handleConnect(cp, false)))
			r.Path(page).Methods(http.MethodPost).HandlerFunc(browser(s.handleConnectConfirm(cp, false)))
			r.Path(page + pathDisconnect).Methods(http.MethodGet).HandlerFunc(browser(s.handleConnect(cp, true)))
			r.Path(page + pathDisconnect).Methods(http.MethodPost).HandlerFunc(browser(s.handleConnectConfirm(cp, true)))
		}
	}
	r.Path(p + pathToken).Methods(http.MethodPost).HandlerFunc(s.observed(EndpointToken, s.limits.byIP(s.token.handleToken)))
	r.Path(p + pathIntrospect).Methods(http.MethodPost).HandlerFunc(s.observed(EndpointIntrospection, s.limits.byIP(s.introspection.handleIntrospect)))
	r.Path(p + pathRevoke).Methods(http.MethodPost).HandlerFunc(s.observed(EndpointRevocation, s.limits.byIP(s.revocation.handleRevoke)))
	if !s.cfg.DisableRegistration {
		r.Path(p + pathRegister).Methods(http.MethodPost).HandlerFunc(s.observed(EndpointRegistration, s.limits.byIP(s.registration.handleRegister)))
	}
	if s.admin != nil {
		r.Path(p + pathAdminGrants).Methods(get...).HandlerFunc(s.limits.byIP(s.admin.handleList))
		r.Path(p + pathAdminRevoke).Methods(http.MethodPost).HandlerFunc(s.limits.byIP(s.admin.handleRevoke))
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not found", http.StatusNotFound)
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	})
	return r
}

// matched dispatches a request to the handler of the route gorilla/mux
// matches, with the request as it came: no route here has variables, so
// the two request copies Router.ServeHTTP makes to carry the route and
// its variables in the context are work without a reader. Router.Match
// always finds a handler, as the router has NotFoundHandler and
// MethodNotAllowedHandler, and SkipClean means Router.ServeHTTP would not
// redirect either.
type matched struct{ r *mux.Router }

func (m matched) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var match mux.RouteMatch
	if m.r.Match(req, &match) && match.Handler != nil {
		match.Handler.ServeHTTP(w, req)
		return
	}
	m.r.NotFoundHandler.ServeHTTP(w, req)
}

// commonHeaders adds headers every response carries.
func commonHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
