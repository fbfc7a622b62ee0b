package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// BenchmarkRoundTrip measures what an authorized request costs on top of
// a plain one, with the token already stored: the reference
// (sub-benchmark "plain") and the Transport over the memory and the file
// store hit the same local server in the same run. Report the ratios.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	resource := srv.URL + "/mcp"
	base := &http.Transport{MaxIdleConnsPerHost: 4}
	defer base.CloseIdleConnections()

	send := func(b *testing.B, rt http.RoundTripper) {
		hc := &http.Client{Transport: rt}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			resp, err := hc.Post(resource, "application/json", nil)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
	}
	b.Run("plain", func(b *testing.B) { send(b, base) })
	b.Run("transport-memory", func(b *testing.B) {
		send(b, seededTransport(b, tokenstore.NewMemory(), resource, base))
	})
	b.Run("transport-file", func(b *testing.B) {
		store, _ := tokenstore.NewFile(filepath.Join(b.TempDir(), "tokens.json"))
		send(b, seededTransport(b, store, resource, base))
	})
}

// seededTransport returns a Transport for resource whose store already
// holds discovery, registration and a valid token.
func seededTransport(b *testing.B, store tokenstore.Store, resource string, base http.RoundTripper) *Transport {
	b.Helper()
	ctx := context.Background()
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	const issuer = "https://as.example.com"
	d := &tokenstore.Discovery{Resource: resource, ResourceIndicator: resource, Issuer: issuer, FetchedAt: now, Expires: now.Add(time.Hour),
		AuthServer: &oauthmeta.AuthServerMetadata{Issuer: issuer, AuthorizationEndpoint: issuer + "/authorize", TokenEndpoint: issuer + "/token"}}
	reg := &tokenstore.Registration{Issuer: issuer, Method: tokenstore.MethodDynamic, ClientID: "c", RedirectURIs: []string{DefaultRedirectURI}}
	tok := &tokenstore.Token{Token: oauth2.Token{AccessToken: "at", TokenType: "Bearer", Expiry: now.Add(time.Hour)}}
	if err := store.PutDiscovery(ctx, d); err != nil {
		b.Fatal(err)
	}
	if err := store.PutRegistration(ctx, reg); err != nil {
		b.Fatal(err)
	}
	if err := store.PutToken(ctx, tokenstore.Key{Issuer: issuer, Resource: resource, ClientID: "c"}, tok); err != nil {
		b.Fatal(err)
	}
	c, err := New(Config{Authorizer: &FollowRedirects{}, Store: store, InsecureAllowHTTPLoopback: true, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := c.Transport(resource, base)
	if err != nil {
		b.Fatal(err)
	}
	return tr
}
