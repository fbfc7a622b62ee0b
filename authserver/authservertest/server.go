package authservertest

import (
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
)

// Server is an [authserver.Server] on a loopback httptest listener, for
// tests of clients and resource servers.
type Server struct {
	// URL is the listener's origin, http://127.0.0.1:<port>, without a
	// trailing slash. The issuer is URL, or URL followed by a path.
	URL string
	// AS is the authorization server. Faults apply to its answers on the
	// listener only: AS.Metadata and AS.ServeHTTP behave correctly.
	AS *authserver.Server

	http *httptest.Server
}

// TB is the part of [testing.TB] that [NewServer] uses; a *testing.T, a
// *testing.B and a *testing.F are each one. It is an interface of its own
// so that this package does not link the testing package into the programs
// that use [InjectFaults].
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// NewServer starts an authorization server as [Start] does and closes it
// when t ends; an invalid cfg or fault fails t.
func NewServer(t TB, cfg authserver.Config, faults ...Fault) *Server {
	t.Helper()
	s, err := Start(cfg, faults...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts an authorization server on a fresh http://127.0.0.1:<port>
// listener, answering with faults (none means a correct server). The
// issuer is that origin, followed by cfg.Issuer when cfg.Issuer is a path
// such as "/tenant1" (any other value is replaced);
// InsecureAllowHTTPLoopback is set, since the listener is plain http on
// loopback. The caller closes the server.
func Start(cfg authserver.Config, faults ...Fault) (*Server, error) {
	for _, f := range faults {
		if _, err := ParseFault(string(f)); err != nil {
			return nil, err
		}
	}
	srv := httptest.NewUnstartedServer(nil)
	path := ""
	if strings.HasPrefix(cfg.Issuer, "/") {
		path = strings.TrimSuffix(cfg.Issuer, "/")
	}
	origin := "http://" + srv.Listener.Addr().String()
	cfg.Issuer = origin + path
	cfg.InsecureAllowHTTPLoopback = true
	as, err := authserver.New(cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	srv.Config.Handler = InjectFaults(as, faults...)
	srv.Start()
	return &Server{URL: origin, AS: as, http: srv}, nil
}

// Issuer returns the issuer identifier.
func (s *Server) Issuer() string { return s.AS.Issuer() }

// Client returns an HTTP client for the server, whose idle connections are
// closed by Close. It follows redirects, as http.Client does by default.
func (s *Server) Client() *http.Client { return s.http.Client() }

// Close stops the listener and closes the authorization server.
func (s *Server) Close() {
	s.http.Close()
	_ = s.AS.Close()
}
