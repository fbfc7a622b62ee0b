package authserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestPersistence: on a bbolt file, signing keys, registered clients,
// grants and refresh tokens survive a restart.
func TestPersistence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "authserver.db")
	clock := newClock()
	var closeStore io.Closer
	start := func() *harness {
		if OpenBoltBackend == nil {
			t.Fatal("no bbolt backend: backends_ext_test.go sets OpenBoltBackend")
		}
		var st Storage
		st, closeStore = OpenBoltBackend(t, path)
		h := newHarness(t, "", func(c *Config) { c.Storage = st; c.Now = clock.Now })
		return h
	}
	h1 := start()
	info := h1.register(t, `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`)
	tok := h1.tokens(nil)
	kid1, _ := h1.verifyJWT(tok.AccessToken)
	h1.srv.Close()
	if err := errors.Join(h1.as.Close(), closeStore.Close()); err != nil {
		t.Fatal(err)
	}

	// The second instance has a new port, so a new issuer: keys are reused
	// anyway, and the data is there.
	h2 := start()
	if set := h2.jwks(); len(set.Key(kid1.KeyID)) != 1 {
		t.Fatal("signing key not kept across restart")
	}
	q, v := authParams(info.ClientID, "http://127.0.0.1/cb")
	if h2.code(q, v) == "" {
		t.Fatal("registered client lost")
	}
	res := h2.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {publicID}}, "", "")
	if res.status != http.StatusOK {
		t.Fatalf("refresh after restart: %d %s", res.status, res.body)
	}
	if kid2, _ := h2.verifyJWT(res.tok.AccessToken); kid2.KeyID != kid1.KeyID {
		t.Fatalf("new key after restart: %s vs %s", kid2.KeyID, kid1.KeyID)
	}
	// Reuse detection works across the restart too.
	wantError(t, h2.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {publicID}}, "", ""),
		400, oauthmeta.CodeInvalidGrant)
}

// TestKeyRotation covers requirement AS-11's rotation: a new key is
// published before it signs; the old one stays published until its tokens
// have expired.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.KeyPrePublish = 5 * time.Minute; c.AccessTokenTTL = 10 * time.Minute })
	oldKid, _ := h.verifyJWT(h.tokens(nil).AccessToken)
	if err := h.as.RotateSigningKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.jwks().Keys); n != 2 {
		t.Fatalf("after rotation: %d published keys, want 2", n)
	}
	if kid, _ := h.verifyJWT(h.tokens(nil).AccessToken); kid.KeyID != oldKid.KeyID {
		t.Fatal("the new key signs before its pre-publication period")
	}
	h.clock.Advance(5 * time.Minute)
	newKid, _ := h.verifyJWT(h.tokens(nil).AccessToken)
	if newKid.KeyID == oldKid.KeyID {
		t.Fatal("the new key does not sign after pre-publication")
	}
	set := h.jwks()
	if len(set.Key(oldKid.KeyID)) != 1 {
		t.Fatal("the old key was withdrawn while its tokens are valid")
	}
	h.clock.Advance(12 * time.Minute)
	if set := h.jwks(); len(set.Key(oldKid.KeyID)) != 0 || len(set.Keys) != 1 {
		t.Fatalf("old key still published after its tokens expired: %d keys", len(set.Keys))
	}
}

// TestAutomaticKeyRotation: KeyRotationInterval schedules keys without a
// background goroutine.
func TestAutomaticKeyRotation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.KeyRotationInterval = time.Hour; c.KeyPrePublish = time.Minute })
	first, _ := h.verifyJWT(h.tokens(nil).AccessToken)
	h.clock.Advance(time.Hour)
	h.tokens(nil) // schedules the next key
	if n := len(h.jwks().Keys); n != 2 {
		t.Fatalf("%d keys published, want 2", n)
	}
	h.clock.Advance(time.Minute)
	if next, _ := h.verifyJWT(h.tokens(nil).AccessToken); next.KeyID == first.KeyID {
		t.Fatal("rotation did not happen")
	}
}

// TestNoSecretsLogged: after every flow, success and failure, the logs
// contain no code, token, verifier or client secret (RS-24's rule, applied
// to the authorization server).
func TestNoSecretsLogged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	q, v := authParams(publicID, publicCB)
	code := h.code(q, v)
	res := h.exchange(code, v, publicCB, nil)
	h.exchange(code, v, publicCB, nil) // replay: logged as a warning
	h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {publicID}}, "", "")
	h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {publicID}}, "", "")
	h.token(url.Values{"grant_type": {"authorization_code"}, "code": {"x"}}, basicID, "wrong-secret-value")
	info := h.register(t, `{"redirect_uris":["https://a.example.com/cb"]}`)
	h.introspect(res.tok.AccessToken)
	logs := h.logs.String()
	if logs == "" {
		t.Fatal("nothing was logged; the test proves nothing")
	}
	for _, secret := range []string{code, v, res.tok.AccessToken, res.tok.RefreshToken, basicSecret, "wrong-secret-value", info.ClientSecret, q.Get("state")} {
		if secret != "" && strings.Contains(logs, secret) {
			t.Fatalf("logs contain a secret value: %s", logs)
		}
	}
}

// TestIssuerWithPath: the whole flow works for http://127.0.0.1:port/tenant1.
func TestIssuerWithPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "/tenant1", nil)
	resp := h.get(strings.Replace(h.issuer, "/tenant1", "/.well-known/oauth-authorization-server/tenant1", 1))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d", resp.StatusCode)
	}
	tok := h.tokens(nil)
	if _, claims := h.verifyJWT(tok.AccessToken); claims["iss"] != h.issuer {
		t.Fatalf("iss %v", claims["iss"])
	}
	q, _ := authParams(publicID, publicCB)
	if loc := location(t, h.authorize(q)); loc.Query().Get("iss") != h.issuer {
		t.Fatalf("iss param %q", loc.Query().Get("iss"))
	}
}

// TestSweep: expired records disappear from the in-memory store.
func TestSweep(t *testing.T) {
	t.Parallel()
	m := NewMemoryStore()
	h := newHarness(t, "", func(c *Config) { c.Storage = m.Storage() })
	h.tokens(nil)
	q, v := authParams(publicID, publicCB)
	h.code(q, v)
	h.clock.Advance(DefaultRefreshTokenTTL + time.Minute)
	h.get(h.url(pathJWKS)) // any request triggers the sweep
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.codes)+len(m.grants)+len(m.refresh) != 0 {
		t.Fatalf("left: %d codes, %d grants, %d refresh tokens", len(m.codes), len(m.grants), len(m.refresh))
	}
}
