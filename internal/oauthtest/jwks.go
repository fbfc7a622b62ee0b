package oauthtest

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// JWKS and metadata paths served by [JWKSServer].
const (
	JWKSPath     = "/jwks"
	MetadataPath = "/.well-known/oauth-authorization-server"
)

// JWKSServer is an https test server on 127.0.0.1 that publishes a JWK Set
// at [JWKSPath] and RFC 8414 metadata naming it at [MetadataPath]. Its
// issuer identifier is its URL. Counters, keys, status and cache headers
// can be changed while it runs; all methods are safe for concurrent use.
type JWKSServer struct {
	// Server is the underlying test server; it is closed by t.Cleanup.
	Server *httptest.Server
	// Issuer is the server URL, also the metadata "issuer".
	Issuer string
	// JWKSURI is the URL of the JWK Set.
	JWKSURI string

	jwksFetches     atomic.Int64
	metadataFetches atomic.Int64

	mu           sync.Mutex
	keys         []*Key
	status       int
	cacheControl string
	gate         chan struct{}
	extraJWKS    []json.RawMessage
	rawJWKS      []byte
}

// NewJWKSServer starts a server publishing keys.
func NewJWKSServer(t testing.TB, keys ...*Key) *JWKSServer {
	t.Helper()
	return newJWKSServer(t, httptest.NewTLSServer, keys)
}

// NewPlainJWKSServer is [NewJWKSServer] on plain http, for code under test
// that is configured with InsecureAllowHTTPLoopback (a command line's
// --insecure-http); [JWKSServer.TLSConfig] is nil then.
func NewPlainJWKSServer(t testing.TB, keys ...*Key) *JWKSServer {
	t.Helper()
	return newJWKSServer(t, httptest.NewServer, keys)
}

func newJWKSServer(t testing.TB, start func(http.Handler) *httptest.Server, keys []*Key) *JWKSServer {
	s := &JWKSServer{keys: keys, status: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+JWKSPath, s.serveJWKS)
	mux.HandleFunc("GET "+MetadataPath, s.serveMetadata)
	s.Server = start(mux)
	t.Cleanup(s.Server.Close)
	s.Issuer = s.Server.URL
	s.JWKSURI = s.Server.URL + JWKSPath
	return s
}

// TLSConfig returns a client TLS configuration that trusts the server.
func (s *JWKSServer) TLSConfig() *tls.Config {
	if s.Server.TLS == nil {
		return nil
	}
	return s.Server.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
}

// SetKeys replaces the published keys.
func (s *JWKSServer) SetKeys(keys ...*Key) { setLocked(&s.mu, &s.keys, keys) }

// AddRawJWK publishes an extra JWK given as raw JSON (for keys the Key type
// cannot express, such as symmetric or encryption keys).
func (s *JWKSServer) AddRawJWK(jwk string) {
	locked(&s.mu, func() { s.extraJWKS = append(s.extraJWKS, json.RawMessage(jwk)) })
}

// SetRawJWKS makes the JWK Set endpoint answer with body as it is, instead
// of the keys (nil restores them), for documents the keys cannot express:
// private or malformed members, duplicate names, oversized sets.
func (s *JWKSServer) SetRawJWKS(body []byte) { setLocked(&s.mu, &s.rawJWKS, body) }

// SetStatus makes the JWK Set endpoint answer with status (200 restores it).
func (s *JWKSServer) SetStatus(status int) { setLocked(&s.mu, &s.status, status) }

// SetCacheControl sets the Cache-Control header of JWK Set responses.
func (s *JWKSServer) SetCacheControl(v string) { setLocked(&s.mu, &s.cacheControl, v) }

// Hold makes JWK Set requests wait until the returned function is called,
// so a test can pile up concurrent requests behind one fetch.
func (s *JWKSServer) Hold() (release func()) {
	g := make(chan struct{})
	setLocked(&s.mu, &s.gate, g)
	return sync.OnceFunc(func() {
		setLocked(&s.mu, &s.gate, nil)
		close(g)
	})
}

// JWKSFetches reports how many JWK Set requests arrived.
func (s *JWKSServer) JWKSFetches() int { return int(s.jwksFetches.Load()) }

// MetadataFetches reports how many metadata requests arrived.
func (s *JWKSServer) MetadataFetches() int { return int(s.metadataFetches.Load()) }

func (s *JWKSServer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	s.jwksFetches.Add(1)
	s.mu.Lock()
	gate, status, cc, raw := s.gate, s.status, s.cacheControl, s.rawJWKS
	keys, extra := slices.Clone(s.keys), slices.Clone(s.extraJWKS)
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if status != http.StatusOK {
		http.Error(w, "unavailable", status)
		return
	}
	if raw != nil {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(raw)
		return
	}
	members := []json.RawMessage{}
	for _, k := range keys {
		b, err := k.JWK().MarshalJSON()
		if err != nil {
			http.Error(w, "marshal", http.StatusInternalServerError)
			return
		}
		members = append(members, b)
	}
	members = append(members, extra...)
	w.Header().Set("Content-Type", "application/jwk-set+json")
	if cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": members})
}

func (s *JWKSServer) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	s.metadataFetches.Add(1)
	metadata(w, ASOptions{JWKSURI: s.JWKSURI, NoRegistration: true}, s.Issuer)
}
