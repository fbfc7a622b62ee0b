package resource

import (
	"strings"
	"testing"
)

// FuzzSessionID: open never panics on a client's Mcp-Session-Id, accepts
// exactly the IDs sign made for the same user, and returns the handler's
// ID they were made from.
func FuzzSessionID(f *testing.F) {
	b, err := newSessionBinder([]byte(strings.Repeat("k", MinSessionKeyBytes)), "https://mcp.example.com/mcp")
	if err != nil {
		f.Fatal(err)
	}
	alice := sessionUser(TokenInfo{Issuer: "https://auth.example.com", Subject: "alice"}, "tok-a")
	bob := sessionUser(TokenInfo{Issuer: "https://auth.example.com", Subject: "bob"}, "tok-b")
	f.Add("s-1", b.sign(alice, "s-1"))
	f.Add("x", "")
	f.Add("", ".AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("a.b", b.sign(alice, "a.b")+".")
	f.Fuzz(func(t *testing.T, id, sent string) {
		if got, ok := b.open(alice, sent); ok {
			if b.sign(alice, got) != sent {
				t.Fatalf("open accepted %q, which sign did not make", sent)
			}
			if _, ok := b.open(bob, sent); ok {
				t.Fatalf("%q accepted for two users", sent)
			}
		}
		if id == "" {
			return
		}
		signed := b.sign(alice, id)
		if got, ok := b.open(alice, signed); !ok || got != id {
			t.Fatalf("open(sign(%q)) = %q, %v", id, got, ok)
		}
		if _, ok := b.open(bob, signed); ok {
			t.Fatalf("alice's session %q accepted for bob", id)
		}
	})
}

// sessionUser is a verification of token with identity info.
func sessionUser(info TokenInfo, token string) *authValue {
	av := newAuthValue(token)
	*av.info = info
	return av
}

// TestSessionPrincipal: a token without a subject is bound to its client,
// never to a user whose subject has the same value; a token with neither
// subject nor client_id is bound to itself, never to another such token
// or to a client or user whose name is that token.
func TestSessionPrincipal(t *testing.T) {
	b, _ := newSessionBinder(nil, "https://mcp.example.com/mcp")
	const iss = "https://auth.example.com"
	c1 := sessionUser(TokenInfo{Issuer: iss, ClientID: "c1"}, "tok-1")
	c1Refreshed := sessionUser(TokenInfo{Issuer: iss, ClientID: "c1"}, "tok-2")
	c2 := sessionUser(TokenInfo{Issuer: iss, ClientID: "c2"}, "tok-1")
	other := sessionUser(TokenInfo{Issuer: "https://other.example.com", ClientID: "c1"}, "tok-1")
	userC1 := sessionUser(TokenInfo{Issuer: iss, Subject: "c1"}, "tok-1")
	anon1 := sessionUser(TokenInfo{Issuer: iss}, "opaque-1")
	anon1Again := sessionUser(TokenInfo{Issuer: iss}, "opaque-1")
	anon2 := sessionUser(TokenInfo{Issuer: iss}, "opaque-2")
	namedLikeToken := sessionUser(TokenInfo{Issuer: iss, Subject: "opaque-1"}, "x")
	clientLikeToken := sessionUser(TokenInfo{Issuer: iss, ClientID: "opaque-1"}, "x")
	for _, tc := range []struct {
		name   string
		owner  *authValue
		same   []*authValue
		others []*authValue
	}{
		{"client", c1, []*authValue{c1Refreshed}, []*authValue{c2, other, userC1, anon1}},
		{"no subject, no client", anon1, []*authValue{anon1Again}, []*authValue{anon2, namedLikeToken, clientLikeToken, c1}},
	} {
		s := b.sign(tc.owner, "s")
		for _, av := range append([]*authValue{tc.owner}, tc.same...) {
			if _, ok := b.open(av, s); !ok {
				t.Errorf("%s: own session refused to %+v", tc.name, *av.info)
			}
		}
		for _, av := range tc.others {
			if _, ok := b.open(av, s); ok {
				t.Errorf("%s: %+v (token %q) accepted the session", tc.name, *av.info, av.token)
			}
		}
	}
}
