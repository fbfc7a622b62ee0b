package authserver

import (
	"net/http/httptest"
	"strings"
)

// TestServer is a [Server] listening on a loopback httptest listener, for
// tests of clients and resource servers.
type TestServer struct {
	// HTTP is the running listener; HTTP.URL is the issuer's origin.
	HTTP *httptest.Server
	// AS is the authorization server.
	AS *Server
}

// StartTestServer starts an authorization server on a fresh
// http://127.0.0.1:<port> listener in one call. The issuer is that origin,
// followed by cfg.Issuer when cfg.Issuer is a path such as "/tenant1" (any
// other value is replaced); InsecureAllowHTTPLoopback is set, since the listener is
// plain http on loopback. Close it when done.
func StartTestServer(cfg Config) (*TestServer, error) {
	srv := httptest.NewUnstartedServer(nil)
	path := ""
	if strings.HasPrefix(cfg.Issuer, "/") {
		path = strings.TrimSuffix(cfg.Issuer, "/")
	}
	cfg.Issuer = "http://" + srv.Listener.Addr().String() + path
	cfg.InsecureAllowHTTPLoopback = true
	as, err := New(cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	srv.Config.Handler = as
	srv.Start()
	return &TestServer{HTTP: srv, AS: as}, nil
}

// Issuer returns the issuer identifier.
func (t *TestServer) Issuer() string { return t.AS.Issuer() }

// Close stops the listener and closes the server.
func (t *TestServer) Close() {
	t.HTTP.Close()
	_ = t.AS.Close()
}
