package authserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestCL25CIMDPrivateKeyJWT covers requirements CL-25, CIMD-03 and CIMD-09
// on the server side: a Client ID Metadata Document with
// token_endpoint_auth_method private_key_jwt and jwks (inline) or jwks_uri
// (fetched through the SSRF-guarded fetcher) authenticates at the token
// endpoint with an RFC 7523 assertion; a replayed assertion is refused.
func TestCL25CIMDPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	const inline, remote = "https://client.example.com/pk-inline.json", "https://client.example.com/pk-remote.json"
	pkDoc := func(id, keys string) string {
		return strings.Replace(cimdDoc(id, keys), `"none"`, `"private_key_jwt"`, 1)
	}
	host := newCIMDHostWith(t, map[string]string{
		"/pk-inline.json": pkDoc(inline, `,"jwks":`+string(set)),
		"/pk-remote.json": pkDoc(remote, `,"jwks_uri":"https://client.example.com/pk-jwks"`),
		"/pk-jwks":        string(set),
	})
	h := newHarness(t, "", func(c *Config) {
		c.ClientMetadata = host.resolver(t, nil)
		c.KeyFetch = KeyFetchConfig{
			TLSConfig: host.srv.Client().Transport.(*http.Transport).TLSClientConfig,
			netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(oauthtest.PublicAddr), Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, host.srv.Listener.Addr().String())
			}}),
		}
	})
	for _, clientID := range []string{inline, remote} {
		t.Run(clientID, func(t *testing.T) {
			t.Parallel()
			signer, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: clientID, Key: key, KeyID: "k1", Now: h.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			assertion, _ := signer.Sign(h.issuer)
			q, v := authParams(clientID, cimdCB)
			code := h.code(q, v)
			form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {v}, "redirect_uri": {cimdCB},
				"client_id": {clientID}, "client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {assertion}}
			res := h.token(form, "", "")
			if res.status != http.StatusOK {
				t.Fatalf("exchange: %d %s", res.status, res.body)
			}
			replay := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {clientID},
				"client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {assertion}}
			wantError(t, h.token(replay, "", ""), 401, oauthmeta.CodeInvalidClient)
			// CIMD-09: without an assertion the client cannot pass as public.
			public := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {clientID}}
			wantError(t, h.token(public, "", ""), 401, oauthmeta.CodeInvalidClient)
			other, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: clientID, Key: mustKey(t), KeyID: "k1", Now: h.clock.Now})
			forged, _ := other.Sign(h.issuer)
			replay.Set("client_assertion", forged)
			wantError(t, h.token(replay, "", ""), 401, oauthmeta.CodeInvalidClient)
			fresh, _ := signer.Sign(h.issuer)
			replay.Set("client_assertion", fresh)
			if r := h.token(replay, "", ""); r.status != http.StatusOK {
				t.Fatalf("refresh with a fresh assertion: %d %s", r.status, r.body)
			}
		})
	}
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
