package attack

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// jwksMode is how the fake issuer's JWK Set endpoint behaves.
type jwksMode int

const (
	jwksOK      jwksMode = iota
	jwksDown             // 503
	jwksSlow             // waits until the request is cancelled
	jwksGarbage          // 200 with a body that is not a JWK Set
)

// keyIssuer is an authorization server reduced to what a resource server
// reads: RFC 8414 metadata and a JWK Set, on a vnet host, with keys and
// behaviour switchable while it runs. It is safe for concurrent use.
type keyIssuer struct {
	Issuer  string
	mu      sync.Mutex
	keys    []*oauthtest.Key
	mode    jwksMode
	fetches atomic.Int64
	release chan struct{}
}

func newKeyIssuer(t testing.TB, n *vnet, host string, keys ...*oauthtest.Key) *keyIssuer {
	k := &keyIssuer{keys: keys, release: make(chan struct{})}
	t.Cleanup(func() { close(k.release) })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": k.Issuer, "authorization_endpoint": k.Issuer + "/authorize",
			"token_endpoint": k.Issuer + "/token", "jwks_uri": k.Issuer + "/jwks",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /jwks", k.serveJWKS)
	k.Issuer = n.Serve(host, mux)
	return k
}

func (k *keyIssuer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	k.fetches.Add(1)
	k.mu.Lock()
	mode, keys := k.mode, k.keys
	k.mu.Unlock()
	switch mode {
	case jwksDown:
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	case jwksSlow:
		select {
		case <-r.Context().Done():
		case <-k.release:
		case <-time.After(30 * time.Second):
		}
		return
	case jwksGarbage:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"!!","y":42}],"garbage":`))
		return
	}
	set := oauthtest.JWKS(keys...)
	w.Header().Set("Content-Type", "application/jwk-set+json")
	json.NewEncoder(w).Encode(jose.JSONWebKeySet(set))
}

// Set replaces the published keys.
func (k *keyIssuer) Set(keys ...*oauthtest.Key) { k.mu.Lock(); k.keys = keys; k.mu.Unlock() }

// Mode switches the JWK Set endpoint's behaviour.
func (k *keyIssuer) Mode(m jwksMode) { k.mu.Lock(); k.mode = m; k.mu.Unlock() }

// Fetches reports how many JWK Set requests arrived.
func (k *keyIssuer) Fetches() int64 { return k.fetches.Load() }
