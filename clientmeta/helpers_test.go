package clientmeta

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// fakeClock is the shared settable test clock.
type fakeClock = oauthtest.Clock

func newClock() *fakeClock { return oauthtest.NewClock(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)) }

// target is a TLS test server on 127.0.0.1 dressed up as a public host: the
// resolver says every name is publicAddr, and the dial function quietly
// connects to the test server instead.
type target struct {
	srv   *httptest.Server
	hits  atomic.Int32
	dials atomic.Int32
}

func newTarget(t *testing.T, h http.Handler) *target {
	t.Helper()
	tg := &target{}
	tg.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	tg.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tg.srv.StartTLS()
	t.Cleanup(tg.srv.Close)
	return tg
}

// config returns a resolver configuration that reaches the target.
func (tg *target) config(clock *fakeClock) ResolverConfig {
	return ResolverConfig{
		TLSConfig: tg.srv.Client().Transport.(*http.Transport).TLSClientConfig,
		Now:       clock.Now,
		netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(oauthtest.PublicAddr), Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			tg.dials.Add(1)
			if address != "93.184.216.34:443" && address != "93.184.216.34:8443" {
				return nil, errors.New("unexpected dial target " + address)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, tg.srv.Listener.Addr().String())
		}}),
	}
}

// docJSON returns a valid document for clientID.
func docJSON(clientID string) string {
	return `{"client_id":"` + clientID + `","client_name":"Example MCP Client",` +
		`"redirect_uris":["http://127.0.0.1:3000/callback"],` +
		`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],` +
		`"token_endpoint_auth_method":"none"}`
}

// serveDoc answers with body and the given headers.
func serveDoc(body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		_, _ = w.Write([]byte(body))
	}
}
