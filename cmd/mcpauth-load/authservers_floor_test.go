package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestFloorServer drives the token floor the way -authservers does and
// checks that it refuses what a token endpoint must refuse: a wrong
// client secret, a reused refresh token, a code redeemed twice or with
// the wrong PKCE verifier, an unknown grant type.
func TestFloorServer(t *testing.T) {
	t.Parallel()
	f, err := newFloorServer("")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	f.issuer = srv.URL
	a := &authServer{name: "floor", issuer: srv.URL, tokenURL: srv.URL + "/token", authorizeURL: srv.URL + "/authorize",
		ccSecret: asCCSecret, ccScope: asScope, authScope: asScope, user: floorUser, transport: &http.Transport{}, refreshTokens: make([]string, 1)}
	defer a.transport.CloseIdleConnections()
	ctx := context.Background()
	if err := a.fetchKeys(ctx); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: a.transport}
	if err := a.clientCredentials(ctx, hc, true); err != nil {
		t.Fatalf("client_credentials: %v", err)
	}
	if _, err := a.relogin(ctx, 0); err != nil {
		t.Fatalf("login: %v", err)
	}
	old := a.refreshTokens[0]
	if err := a.refresh(ctx, hc, 0, true); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	post := func(form url.Values, user, pass string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.tokenURL, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name       string
		form       url.Values
		user, pass string
		want       int
	}{
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "scope": {asScope}}, asCCClient, "wrong", http.StatusUnauthorized},
		{"no secret", url.Values{"grant_type": {"client_credentials"}, "scope": {asScope}}, "", "", http.StatusUnauthorized},
		{"other scope", url.Values{"grant_type": {"client_credentials"}, "scope": {"admin"}}, asCCClient, asCCSecret, http.StatusBadRequest},
		{"reused refresh token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old}, "client_id": {asApp}}, "", "", http.StatusBadRequest},
		{"refresh of another client", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a.refreshTokens[0]}, "client_id": {"x"}}, "", "", http.StatusUnauthorized},
		{"unknown code", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {asApp}, "redirect_uri": {asRedirect}, "code_verifier": {strings.Repeat("a", 43)}}, "", "", http.StatusBadRequest},
		{"unknown grant", url.Values{"grant_type": {"password"}}, "", "", http.StatusBadRequest},
	} {
		if got := post(tc.form, tc.user, tc.pass); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	// A wrong PKCE verifier loses the code.
	jar := &http.Client{Transport: a.transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"response_type": {"code"}, "client_id": {asApp}, "redirect_uri": {asRedirect}, "state": {"s"},
		"code_challenge": {strings.Repeat("b", 43)}, "code_challenge_method": {"S256"}}
	resp, err := jar.Get(a.authorizeURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	code := loc.Query().Get("code")
	redeem := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {asApp}, "redirect_uri": {asRedirect}, "code_verifier": {strings.Repeat("a", 43)}}
	if got := post(redeem, "", ""); got != http.StatusBadRequest {
		t.Errorf("wrong verifier: status %d", got)
	}
	if got := post(redeem, "", ""); got != http.StatusBadRequest {
		t.Errorf("code after a failed redemption: status %d", got)
	}
}

// TestTokenGenerations: the floor's refresh tokens stay bounded without
// refusing new ones; a token survives one rollover and is gone after two;
// a token is taken once.
func TestTokenGenerations(t *testing.T) {
	t.Parallel()
	key := func(i int) [32]byte { return [32]byte{byte(i), byte(i >> 8)} }
	g := newTokenGenerations(4)
	for i := range 4 {
		g.add(key(i))
	}
	g.add(key(4)) // rollover: 0–3 are the previous generation
	if !g.take(key(0)) || g.take(key(0)) {
		t.Fatal("token 0: want it taken once after one rollover")
	}
	for i := 5; i < 9; i++ {
		g.add(key(i)) // 8 rolls 4–7 over, dropping 1–3
	}
	if g.take(key(1)) {
		t.Error("token 1 survived two rollovers")
	}
	if !g.take(key(4)) || !g.take(key(8)) {
		t.Error("recent tokens lost")
	}
	if n := len(g.cur) + len(g.previous); n > 8 {
		t.Errorf("%d tokens kept, want at most 8", n)
	}
}
