package upstream

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/keyset"
)

// FuzzUpstreamIDToken feeds arbitrary ID tokens to the upstream verifier,
// whose key source is a fixed set that never fetches. Nothing may panic,
// and only the token signed by the provider's key with the expected claims
// and nonce is accepted.
func FuzzUpstreamIDToken(f *testing.F) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := &fakeProvider{t: &testing.T{}, key: key, kid: "k1", issuer: "https://idp.example", now: func() time.Time { return now }}
	valid := p.sign(key, p.defaultClaims(url.Values{"nonce": {"n1"}}))
	f.Add(valid, "n1")
	f.Add(valid, "n2")
	f.Add("eyJhbGciOiJub25lIn0.e30.", "n1")
	f.Add(strings.Repeat("a.", 3), "")
	u := newOIDC(&client{cfg: Config{Issuer: p.issuer, ClientID: upstreamClientID, GroupsClaim: "groups"},
		now: func() time.Time { return now }})
	u.keys = staticKeys{{ID: "k1", Algorithm: "ES256", Public: &key.PublicKey}}
	f.Fuzz(func(t *testing.T, raw, nonce string) {
		id, err := u.verifyIDToken(context.Background(), raw, nonce)
		if err == nil && (raw != valid || nonce != "n1" || id.Subject != "alice-123") {
			t.Fatalf("accepted %q with nonce %q", raw, nonce)
		}
	})
}

// staticKeys is a key source that never fetches.
type staticKeys []jwa.Key

func (k staticKeys) Keys(_ context.Context, kid string) ([]jwa.Key, error) {
	var out []jwa.Key
	for _, key := range k {
		if kid == "" || key.ID == kid {
			out = append(out, key)
		}
	}
	if len(out) == 0 {
		return nil, keyset.ErrUnknownKey
	}
	return out, nil
}

func (staticKeys) Close() error { return nil }

func (staticKeys) Ready(context.Context) error { return nil }

// FuzzUpstreamUserInfo feeds arbitrary user-info answers of a plain OAuth
// 2.0 provider to the parser: nothing may panic, and an accepted answer
// always yields a non-empty identifier of at most 255 bytes that is the
// "id" member's string or integer literal.
func FuzzUpstreamUserInfo(f *testing.F) {
	f.Add([]byte(`{"id":583231,"login":"octocat","email":"o@example.com","groups":["a"]}`))
	f.Add([]byte(`{"id":"abc","email_verified":"true"}`))
	f.Add([]byte(`{"id":1.5}`))
	f.Add([]byte(`{"id":1,"id":2}`))
	f.Add([]byte(`{"id":null}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Add([]byte(`{"id":-0}`))
	u := &oauth2Provider{client: &client{cfg: Config{Issuer: "https://github.com", GroupsClaim: "groups"}},
		endpoints: &OAuth2Endpoints{IDField: "id", NameField: "login", EmailField: "email", EmailVerifiedField: "email_verified"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, err := u.parseUserInfo(body)
		if err != nil {
			if !errors.Is(err, errUserInfo) {
				t.Fatalf("error %v does not wrap errUserInfo", err)
			}
			return
		}
		if id.Subject == "" || len(id.Subject) > maxSubjectLen || id.Issuer != "https://github.com" {
			t.Fatalf("accepted %q as %+v", body, id)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		switch v := m["id"].(type) {
		case string:
			if v != id.Subject {
				t.Fatalf("id %q read as %q", v, id.Subject)
			}
		case float64:
			if strings.ContainsAny(id.Subject, ".eE") {
				t.Fatalf("non-integer id %q accepted", id.Subject)
			}
		default:
			t.Fatalf("id %T accepted", v)
		}
	})
}
