package resource_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// remoteFixture is a Verifier whose keys come from a JWKSServer through
// discovery, with the verified-token cache off so every Verify reaches the
// key set.
type remoteFixture struct {
	srv   *oauthtest.JWKSServer
	key   *oauthtest.Key
	clock *oauthtest.Clock
	v     *resource.Verifier
}

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	srv := oauthtest.NewJWKSServer(t, key)
	clock := oauthtest.NewClock(oauthtest.Epoch())
	v, err := resource.New(resource.Config{
		Resource:                  testResource,
		Issuers:                   []resource.Issuer{{Issuer: srv.Issuer}},
		TLSConfig:                 srv.TLSConfig(),
		InsecureAllowHTTPLoopback: true,
		Cache:                     resource.CacheConfig{Disabled: true},
		Now:                       clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return &remoteFixture{srv: srv, key: key, clock: clock, v: v}
}

func (r *remoteFixture) mint(t *testing.T, key *oauthtest.Key, mutate func(*oauthtest.AccessToken)) string {
	c := oauthtest.AccessToken{Issuer: r.srv.Issuer, Audience: []string{testResource}, Subject: "u",
		Expiry: r.clock.Now().Add(time.Hour), IssuedAt: r.clock.Now()}
	if mutate != nil {
		mutate(&c)
	}
	return key.Mint(t, c)
}

func (r *remoteFixture) verify(t *testing.T, tok string) error {
	t.Helper()
	_, err := r.v.Verify(context.Background(), tok)
	return err
}

// TestRemoteKeysDiscovery covers RS-10 (keys only from the validated AS
// metadata's jwks_uri): one metadata fetch, one JWK Set fetch, then memory.
func TestRemoteKeysDiscovery(t *testing.T) {
	t.Parallel()
	r := newRemoteFixture(t)
	if r.srv.JWKSFetches() != 0 {
		t.Fatal("New fetched keys")
	}
	for i := 0; i < 3; i++ {
		if err := r.verify(t, r.mint(t, r.key, nil)); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	if m, j := r.srv.MetadataFetches(), r.srv.JWKSFetches(); m != 1 || j != 1 {
		t.Errorf("metadata fetches %d, JWK Set fetches %d; want 1 and 1", m, j)
	}
}

// TestRemoteKeysCheapChecksFirst covers RS-10: tokens that fail the cheap
// checks never make the key set fetch anything.
func TestRemoteKeysCheapChecksFirst(t *testing.T) {
	t.Parallel()
	r := newRemoteFixture(t)
	bad := []string{
		r.mint(t, r.key, func(c *oauthtest.AccessToken) { c.Issuer = otherIssuer }),
		r.mint(t, r.key, func(c *oauthtest.AccessToken) { c.Audience = []string{"https://other.example/mcp"} }),
		r.mint(t, r.key, func(c *oauthtest.AccessToken) { c.Expiry = r.clock.Now().Add(-time.Hour) }),
		r.key.MintWith(t, oauthtest.Header{Type: "JWT", KeyID: "random"}, oauthtest.AccessToken{Issuer: r.srv.Issuer}),
		oauthtest.Unsigned(t, map[string]any{"kid": "x"}, []byte(`{}`)),
		strings.Repeat("x", 10000),
		"a.b.c",
	}
	for _, tok := range bad {
		if err := r.verify(t, tok); !errors.Is(err, resource.ErrInvalidToken) {
			t.Errorf("err = %v", err)
		}
	}
	if n := r.srv.JWKSFetches() + r.srv.MetadataFetches(); n != 0 {
		t.Errorf("garbage tokens caused %d fetches", n)
	}
}

// TestRemoteKeysUnknownKid covers RS-10's rate-limited refresh: an
// unknown kid costs one fetch, a flood of them no more within the interval,
// and a rotated-in key is accepted once the interval has passed.
func TestRemoteKeysUnknownKid(t *testing.T) {
	t.Parallel()
	r := newRemoteFixture(t)
	if err := r.verify(t, r.mint(t, r.key, nil)); err != nil {
		t.Fatal(err)
	}
	rotated := oauthtest.NewKey(t, oauthtest.ES256, "k2")
	// Right after the initial fetch, an unknown kid fetches nothing.
	if err := r.verify(t, r.mint(t, rotated, nil)); !errors.Is(err, resource.ErrUnknownKey) || r.srv.JWKSFetches() != 1 {
		t.Fatalf("unknown kid right after the first fetch: %v, %d fetches", err, r.srv.JWKSFetches())
	}
	r.clock.Advance(resource.DefaultRefetchInterval)
	for i := 0; i < 20; i++ {
		random := oauthtest.NewKey(t, oauthtest.ES256, "random-"+itoa(int64(i)))
		if err := r.verify(t, r.mint(t, random, nil)); !errors.Is(err, resource.ErrUnknownKey) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if got := r.srv.JWKSFetches(); got != 2 {
		t.Errorf("JWK Set fetches after a flood of unknown kids = %d, want 2 (initial + one refetch)", got)
	}
	r.srv.SetKeys(r.key, rotated)
	if err := r.verify(t, r.mint(t, rotated, nil)); !errors.Is(err, resource.ErrUnknownKey) {
		t.Errorf("within the interval the new key is not fetched yet: %v", err)
	}
	r.clock.Advance(resource.DefaultRefetchInterval)
	if err := r.verify(t, r.mint(t, rotated, nil)); err != nil {
		t.Errorf("rotated-in key after the interval: %v", err)
	}
	if err := r.verify(t, r.mint(t, r.key, nil)); err != nil {
		t.Errorf("old key: %v", err)
	}
	if got := r.srv.JWKSFetches(); got != 3 {
		t.Errorf("JWK Set fetches = %d, want 3", got)
	}
}

// TestRemoteKeysSharedFetch: concurrent misses wait for one fetch.
func TestRemoteKeysSharedFetch(t *testing.T) {
	t.Parallel()
	r := newRemoteFixture(t)
	release := r.srv.Hold()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.v.Verify(context.Background(), r.mint(t, r.key, nil))
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them pile up behind the held fetch
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Verify: %v", err)
		}
	}
	if got := r.srv.JWKSFetches(); got != 1 {
		t.Errorf("JWK Set fetches = %d, want 1", got)
	}
}

// TestRemoteKeysKeepLastGood: a failing refresh keeps the keys in use; a
// failing first fetch is 503 until the issuer recovers.
func TestRemoteKeysKeepLastGood(t *testing.T) {
	t.Parallel()
	r := newRemoteFixture(t)
	if err := r.verify(t, r.mint(t, r.key, nil)); err != nil {
		t.Fatal(err)
	}
	r.srv.SetStatus(http.StatusInternalServerError)
	r.clock.Advance(time.Minute)
	other := oauthtest.NewKey(t, oauthtest.ES256, "k9")
	if err := r.verify(t, r.mint(t, other, nil)); !errors.Is(err, resource.ErrUnknownKey) {
		t.Errorf("unknown kid while the issuer fails: %v", err)
	}
	if err := r.verify(t, r.mint(t, r.key, nil)); err != nil {
		t.Errorf("last good key after a failed refresh: %v", err)
	}

	fresh := newRemoteFixture(t)
	fresh.srv.SetStatus(http.StatusServiceUnavailable)
	err := fresh.verify(t, fresh.mint(t, fresh.key, nil))
	if !errors.Is(err, resource.ErrKeysUnavailable) || !errors.Is(err, resource.ErrUnavailable) {
		t.Fatalf("first fetch failing: %v", err)
	}
	f2 := &fixture{v: fresh.v}
	rec, _ := f2.serve(mcpPost(fresh.mint(t, fresh.key, nil), ""))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", rec.Code)
	}
	fresh.srv.SetStatus(http.StatusOK)
	fresh.clock.Advance(resource.DefaultRefetchInterval)
	if err := fresh.verify(t, fresh.mint(t, fresh.key, nil)); err != nil {
		t.Errorf("after recovery: %v", err)
	}
}

// TestRemoteKeysBackgroundRefresh: the jwk.Cache refreshes by itself,
// following Cache-Control max-age (floored at MinRefreshInterval).
func TestRemoteKeysBackgroundRefresh(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	srv := oauthtest.NewJWKSServer(t, key)
	srv.SetCacheControl("max-age=1")
	rk, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{
		JWKSURI: srv.JWKSURI, TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true,
		MinRefreshInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rk.Close() })
	if _, err := rk.Keys(context.Background(), "k1"); err != nil {
		t.Fatal(err)
	}
	rotated := oauthtest.NewKey(t, oauthtest.ES256, "k2")
	srv.SetKeys(rotated)
	deadline := time.Now().Add(10 * time.Second)
	for srv.JWKSFetches() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if srv.JWKSFetches() < 2 {
		t.Fatal("no background refresh within 10 s")
	}
	// The background refresh published the new set: k2 is known without
	// a caller-triggered fetch (the refetch interval has not passed).
	deadline = time.Now().Add(5 * time.Second)
	for {
		keys, err := rk.Keys(context.Background(), "k2")
		if err == nil && len(keys) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("k2 not published: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := rk.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rk.Keys(context.Background(), "nope"); !errors.Is(err, keyset.ErrUnavailable) {
		t.Errorf("after Close: %v", err)
	}
}

// TestRemoteKeysFiltering: encryption keys and keys whose "alg" does not
// fit are ignored. (A symmetric or private key refuses the whole set:
// TestJWKSCasesRemote.)
func TestRemoteKeysFiltering(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "good")
	srv := oauthtest.NewJWKSServer(t, key)
	srv.AddRawJWK(`{"kty":"EC","kid":"enc","use":"enc","crv":"P-256","x":"` + "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU" + `","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}`)
	srv.AddRawJWK(`{"kty":"EC","kid":"wrongalg","alg":"ES384","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}`)
	rk, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{JWKSURI: srv.JWKSURI, TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rk.Close() })
	all, err := rk.Keys(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].ID != "good" {
		t.Errorf("keys = %+v", all)
	}
}

// TestRemoteKeysSSRF covers CL-23/CIMD-05-style defences on the key fetch:
// a jwks_uri resolving to a private address is never dialled, and
// discovered metadata naming an unsafe jwks_uri is refused.
func TestRemoteKeysSSRF(t *testing.T) {
	t.Parallel()
	dialFails := func(ctx context.Context, network, addr string) (net.Conn, error) {
		t.Errorf("dialled %s", addr)
		return nil, errors.New("no")
	}
	for _, addr := range []string{"10.0.0.5", "169.254.169.254", "127.0.0.1", "192.168.1.1", "::ffff:10.0.0.1"} {
		rk, err := resource.NewRemoteKeys(*nethook.Set(&resource.RemoteKeysConfig{
			JWKSURI: "https://keys.example.com/jwks",
		}, nethook.Net{Resolver: oauthtest.NewResolver(netip.MustParseAddr(addr)), Dial: dialFails}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rk.Keys(context.Background(), "k"); !errors.Is(err, keyset.ErrUnavailable) {
			t.Errorf("%s: %v", addr, err)
		}
		_ = rk.Close()
	}
	// Metadata at a real loopback server whose jwks_uri is plain http.
	mux := http.NewServeMux()
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"` + srv.URL + `","authorization_endpoint":"` + srv.URL + `/a","token_endpoint":"` + srv.URL + `/t","jwks_uri":"http://169.254.169.254/keys"}`))
	})
	rk, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{Issuer: srv.URL, InsecureAllowHTTPLoopback: true,
		TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rk.Close() })
	if _, err := rk.Keys(context.Background(), "k"); !errors.Is(err, keyset.ErrUnavailable) {
		t.Errorf("unsafe jwks_uri in metadata: %v", err)
	}
}

// TestRemoteKeysIssuerMismatch: metadata naming another issuer is not used
// (RFC 8414 §3.3).
func TestRemoteKeysIssuerMismatch(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	srv := oauthtest.NewJWKSServer(t, key)
	rk, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{Issuer: srv.Issuer + "/tenant", TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rk.Close() })
	if _, err := rk.Keys(context.Background(), "k1"); !errors.Is(err, keyset.ErrUnavailable) {
		t.Errorf("err = %v", err)
	}
	if srv.JWKSFetches() != 0 {
		t.Error("fetched the JWK Set named by metadata for another issuer")
	}
}

func TestRemoteKeysConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []resource.RemoteKeysConfig{
		{},
		{JWKSURI: "http://keys.example.com/jwks"},
		{JWKSURI: "javascript:alert(1)"},
		{Issuer: "https://a.example?x=1"},
		{JWKSURI: "https://keys.example.com/jwks", RefetchInterval: -1},
	} {
		if _, err := resource.NewRemoteKeys(cfg); !errors.Is(err, resource.ErrInvalidConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}
