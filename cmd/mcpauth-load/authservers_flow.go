package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpauth/mcpauth/pkce"
)

// asAnswer is a token endpoint answer.
type asAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// asClaims are the claims every access token is checked for.
type asClaims struct {
	Issuer   string           `json:"iss"`
	Subject  string           `json:"sub"`
	ClientID string           `json:"client_id"`
	Expiry   *jwt.NumericDate `json:"exp"`
}

// want is what a token answer must hold.
type want struct {
	sub, clientID string
	// refresh: a refresh token must come, different from old.
	refresh bool
	old     string
	// verify: check the access token's signature against the server's
	// JWK Set too (the claims of every token are checked).
	verify bool
}

// token posts form to the token endpoint (as the cc client with
// client_secret_basic when basic) and checks the answer against w.
func (a *authServer) token(ctx context.Context, hc *http.Client, form url.Values, basic bool, w want) (*asAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(asCCClient), url.QueryEscape(a.ccSecret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d: %.300s", form.Get("grant_type"), resp.StatusCode, body)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/json" {
		return nil, fmt.Errorf("%s: Content-Type %q", form.Get("grant_type"), resp.Header.Get("Content-Type"))
	}
	var ans asAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("%s: %v: %.300s", form.Get("grant_type"), err, body)
	}
	if err := a.check(&ans, w); err != nil {
		return nil, fmt.Errorf("%s: %w", form.Get("grant_type"), err)
	}
	return &ans, nil
}

// tokenAlgs are the signature algorithms an access token may carry.
var tokenAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA}

// check checks a 200 answer: a Bearer access token that is a JWT (RFC
// 9068) from this issuer for w's subject and client, not expired, with a
// valid signature when w.verify; a new refresh token when w.refresh.
func (a *authServer) check(ans *asAnswer, w want) error {
	if !strings.EqualFold(ans.TokenType, "Bearer") || ans.ExpiresIn <= 0 {
		return fmt.Errorf("token_type %q, expires_in %d", ans.TokenType, ans.ExpiresIn)
	}
	tok, err := jwt.ParseSigned(ans.AccessToken, tokenAlgs)
	if err != nil {
		return fmt.Errorf("access token: %w", err)
	}
	var c asClaims
	if w.verify {
		err = tok.Claims(a.keys, &c)
	} else {
		err = tok.UnsafeClaimsWithoutVerification(&c)
	}
	if err != nil {
		return fmt.Errorf("access token claims: %w", err)
	}
	iss := c.Issuer
	if a.issuerTrailing {
		iss = strings.TrimSuffix(iss, "/")
	}
	switch {
	case iss != a.issuer:
		return fmt.Errorf("access token iss %q, want %q", c.Issuer, a.issuer)
	case c.Subject != w.sub || c.ClientID != w.clientID:
		return fmt.Errorf("access token sub %q client_id %q, want %q and %q", c.Subject, c.ClientID, w.sub, w.clientID)
	case c.Expiry == nil || !c.Expiry.Time().After(time.Now()):
		return fmt.Errorf("access token expired or without exp: %v", c.Expiry)
	}
	if w.refresh && (ans.RefreshToken == "" || ans.RefreshToken == w.old) {
		return fmt.Errorf("no new refresh token (got %d bytes, the same as before: %t)", len(ans.RefreshToken), ans.RefreshToken == w.old)
	}
	return nil
}

// clientCredentials is one client_credentials grant.
func (a *authServer) clientCredentials(ctx context.Context, hc *http.Client, verify bool) error {
	_, err := a.token(ctx, hc, url.Values{"grant_type": {"client_credentials"}, "scope": {a.ccScope}}, true,
		want{sub: asCCClient, clientID: asCCClient, verify: verify})
	return err
}

// refresh is one refresh_token grant on worker i's chain, which moves on
// to the new refresh token.
func (a *authServer) refresh(ctx context.Context, hc *http.Client, i int, verify bool) error {
	old := a.refreshTokens[i]
	ans, err := a.token(ctx, hc, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old}, "client_id": {asApp}}, false,
		want{sub: a.user, clientID: asApp, refresh: true, old: old, verify: verify})
	if err != nil {
		return err
	}
	a.refreshTokens[i] = ans.RefreshToken
	return nil
}

// login is one complete authorization-code login with PKCE, as a new
// browser would make it: the authorization request, the server's login
// and consent pages (their forms posted with their hidden fields, the
// approve button's value and the cookies they set) and redirects, up to
// the redirect to the client, whose state, code and (when sent) iss are
// checked; then the code exchange. It returns the token answer.
func (a *authServer) login(ctx context.Context, verify bool) (*asAnswer, error) {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Transport: a.transport, Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier, state := pkce.GenerateVerifier(), randomString()
	q := url.Values{"response_type": {"code"}, "client_id": {asApp}, "redirect_uri": {asRedirect}, "scope": {a.authScope},
		"state": {state}, "code_challenge": {pkce.Challenge(verifier)}, "code_challenge_method": {"S256"}}
	u, err := url.Parse(a.authorizeURL + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	method, form := http.MethodGet, url.Values(nil)
	for step := 0; ; step++ {
		if step == 12 {
			return nil, errors.New("authorize: more than 12 steps")
		}
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
		if err != nil {
			return nil, err
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			// A browser posting the server's own form says so.
			req.Header.Set("Origin", u.Scheme+"://"+u.Host)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		page, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			loc, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("authorize: %d without Location", resp.StatusCode)
			}
			if strings.HasPrefix(loc.String(), asRedirect+"?") {
				return a.redeem(ctx, hc, loc, state, verifier, verify)
			}
			u, method, form = loc, http.MethodGet, nil
		case resp.StatusCode == http.StatusOK:
			action, fields, err := parseForm(page)
			if err != nil {
				return nil, fmt.Errorf("authorize: %s: %w: %.300s", u.Path, err, page)
			}
			if u, err = u.Parse(action); err != nil {
				return nil, err
			}
			for k, v := range a.approve {
				fields[k] = v
			}
			method, form = http.MethodPost, fields
		default:
			return nil, fmt.Errorf("authorize: %s: status %d: %.300s", u.Path, resp.StatusCode, page)
		}
	}
}

// redeem checks the authorization response and exchanges its code.
func (a *authServer) redeem(ctx context.Context, hc *http.Client, loc *url.URL, state, verifier string, verify bool) (*asAnswer, error) {
	p := loc.Query()
	if p.Get("state") != state || p.Get("code") == "" {
		return nil, fmt.Errorf("authorization response without code or with another state: %s", loc.Redacted())
	}
	if iss := p.Get("iss"); iss != "" && strings.TrimSuffix(iss, "/") != a.issuer {
		return nil, fmt.Errorf("authorization response from iss %q", iss)
	}
	return a.token(ctx, hc, url.Values{"grant_type": {"authorization_code"}, "code": {p.Get("code")}, "client_id": {asApp},
		"redirect_uri": {asRedirect}, "code_verifier": {verifier}}, false, want{sub: a.user, clientID: asApp, verify: verify})
}

var (
	formTag     = regexp.MustCompile(`(?is)<form\b[^>]*>`)
	inputTag    = regexp.MustCompile(`(?is)<input\b[^>]*>`)
	attrPattern = regexp.MustCompile(`(?is)\b(action|method|type|name|value)\s*=\s*"([^"]*)"`)
)

// parseForm returns the action and the hidden fields of the one POST
// form of a login or consent page (the servers measured here render
// theirs with double-quoted attributes).
func parseForm(page []byte) (string, url.Values, error) {
	forms := formTag.FindAll(page, -1)
	if len(forms) != 1 {
		return "", nil, fmt.Errorf("%d forms on the page, want one", len(forms))
	}
	attrs := func(tag []byte) map[string]string {
		m := map[string]string{}
		for _, a := range attrPattern.FindAllSubmatch(tag, -1) {
			m[strings.ToLower(string(a[1]))] = html.UnescapeString(string(a[2]))
		}
		return m
	}
	f := attrs(forms[0])
	if !strings.EqualFold(f["method"], "post") || f["action"] == "" {
		return "", nil, fmt.Errorf("form %q is not a POST with an action", forms[0])
	}
	fields := url.Values{}
	for _, in := range inputTag.FindAll(page, -1) {
		if m := attrs(in); strings.EqualFold(m["type"], "hidden") && m["name"] != "" {
			fields.Add(m["name"], m["value"])
		}
	}
	return f["action"], fields, nil
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
