package upstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestVaultProviders: a vault of several providers marks each record with
// the provider that issued its tokens, hands a token out only for that
// provider (or for "the grant's provider"), keeps no tokens of a provider
// it does not know, and refuses a record of before the mark, which it
// cannot attribute.
func TestVaultProviders(t *testing.T) {
	ctx := context.Background()
	mk := func(iss string) Provider {
		p, err := New(Config{Issuer: iss, ClientID: "mcp"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	a, b := mk("https://a.example"), mk("https://b.example")
	for _, bad := range []VaultConfig{
		{},
		{Provider: a, Providers: []Provider{b}},
		{Providers: []Provider{a, mk("https://a.example")}},
		{Providers: []Provider{a, nil}},
	} {
		if _, err := bad.Open(authserver.NewMemoryStore()); !errors.Is(err, authserver.ErrConfig) {
			t.Errorf("Open(%+v): %v, want ErrConfig", bad, err)
		}
	}
	store := authserver.NewMemoryStore()
	clk := newClock()
	av, err := VaultConfig{Providers: []Provider{a, b}, Now: clk.Now}.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	v := av.(*vault)
	exp := clk.Now().Add(time.Hour)
	if _, err := v.Keep(ctx, "https://c.example", &oauth2.Token{AccessToken: "x"}, exp); err == nil {
		t.Error("kept the tokens of an unknown provider")
	}
	bind := func(gid, iss, at string) *authserver.Grant {
		id, err := v.Keep(ctx, iss, &oauth2.Token{AccessToken: at}, exp)
		if err != nil {
			t.Fatal(err)
		}
		g := &authserver.Grant{ID: gid, UpstreamTokens: id, ExpiresAt: exp}
		if err := v.Bind(ctx, id, g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gb := bind("ga", "https://a.example", "at-a"), bind("gb", "https://b.example", "at-b")
	for _, tc := range []struct {
		g         *authserver.Grant
		issuer    string
		want      string
		wantOther bool
	}{
		{ga, "", "at-a", false},
		{ga, "https://a.example", "at-a", false},
		{ga, "https://b.example", "", true},
		{gb, "https://b.example", "at-b", false},
		{gb, "https://a.example", "", true},
		{gb, "", "at-b", false},
	} {
		tok, err := v.Token(ctx, tc.g, tc.issuer)
		if tc.wantOther {
			if oe, ok := errors.AsType[*oauthmeta.Error](err); !ok || oe.Code != oauthmeta.CodeInvalidTarget {
				t.Errorf("%s for %q: %v, want invalid_target", tc.g.ID, tc.issuer, err)
			}
			continue
		}
		if err != nil || tok.AccessToken != tc.want {
			t.Errorf("%s for %q: %+v, %v", tc.g.ID, tc.issuer, tok, err)
		}
	}
	// A record sealed without the issuer (before several providers) opens
	// only in a vault of one provider.
	legacy := &authserver.UpstreamTokens{ID: "legacy", Version: 1, GrantID: "gl", ExpiresAt: exp}
	if err := v.sealInto(legacy, &vaultedToken{AccessToken: "at-old"}); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveUpstreamTokens(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	gl := &authserver.Grant{ID: "gl", UpstreamTokens: "legacy", ExpiresAt: exp}
	if _, err := v.Token(ctx, gl, ""); !errors.Is(err, authserver.ErrNotFound) {
		t.Errorf("legacy record with several providers: %v, want ErrNotFound", err)
	}
	one := &vault{ring: v.ring, store: store, ups: map[string]Provider{"https://a.example": a}, now: clk.Now, log: v.log}
	if tok, err := one.Token(ctx, gl, "https://a.example"); err != nil || tok.AccessToken != "at-old" {
		t.Errorf("legacy record with one provider: %+v, %v", tok, err)
	}
}
