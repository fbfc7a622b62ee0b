package attack

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/pkce"
)

const appRedirect = "https://app.example.com/cb"

// asAttacker is a hostile client with a raw HTTP stack against mcpauth's
// authorization server on as.example.com, which has the public clients
// "app" and "other" and the confidential client "rs" (for introspection).
type asAttacker struct {
	t    *testing.T
	n    *vnet
	as   *asHandle
	sec  *secrets
	logs *logSink
	hc   *http.Client
}

func newASAttacker(t *testing.T, mutate func(n *vnet, c *authserver.Config)) *asAttacker {
	t.Helper()
	a := &asAttacker{t: t, n: newVNet(t), sec: &secrets{}, logs: &logSink{}}
	a.sec.Watch(a.logs)
	a.sec.Add("rs-secret-0123456789")
	a.as = startAS(t, a.n, "as.example.com", a.sec, a.logs, asOptions{cfg: func(c *authserver.Config) {
		c.Clients = []authserver.Client{
			{ID: "app", RedirectURIs: []string{appRedirect, "http://127.0.0.1/cb"}},
			{ID: "other", RedirectURIs: []string{"https://other.example.com/cb"}},
			{ID: "rs", Secret: "rs-secret-0123456789", RedirectURIs: []string{"https://rs.example.com/cb"}},
		}
		if mutate != nil {
			mutate(a.n, c)
		}
	}})
	a.hc = a.n.Client()
	return a
}

// authorize sends the browser's GET /authorize and returns the response
// status and its Location (parsed, nil when absent).
func (a *asAttacker) authorize(q url.Values) (int, *url.URL, string) {
	a.t.Helper()
	resp, err := a.hc.Get(a.as.Issuer + "/authorize?" + q.Encode())
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a.sec.Seen(string(body))
	var loc *url.URL
	if l := resp.Header.Get("Location"); l != "" {
		loc, _ = url.Parse(l)
	}
	return resp.StatusCode, loc, string(body)
}

// authzQuery is a valid authorization request for client "app".
func authzQuery(clientID, redirect, verifier string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"state": {"st-0123456789"}, "code_challenge": {pkce.Challenge(verifier)}, "code_challenge_method": {"S256"},
		"scope": {"mcp:tools"}, "resource": {mcpResource}}
}

// code runs a valid authorization for clientID and returns the code.
func (a *asAttacker) code(clientID, redirect, verifier string) string {
	a.t.Helper()
	status, loc, body := a.authorize(authzQuery(clientID, redirect, verifier))
	if loc == nil || loc.Query().Get("code") == "" {
		a.t.Fatalf("authorize: %d %v %s", status, loc, clip(body, 200))
	}
	return loc.Query().Get("code")
}

// token posts a token request and returns the status and the JSON body.
func (a *asAttacker) token(form url.Values, basic ...string) (int, map[string]any) {
	a.t.Helper()
	return a.post("/token", form, basic...)
}

// post sends a form to the endpoint at path, with Basic credentials when
// basic is a user and a password, and returns the status and the JSON body
// (nil when the body is not a JSON object).
func (a *asAttacker) post(path string, form url.Values, basic ...string) (int, map[string]any) {
	a.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.as.Issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return resp.StatusCode, m
}

func (a *asAttacker) redeem(clientID, code, redirect, verifier string) (int, map[string]any) {
	return a.token(url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {mcpResource}})
}

func (a *asAttacker) refresh(clientID, rt string) (int, map[string]any) {
	return a.token(url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {rt}, "resource": {mcpResource}})
}

// active introspects tok as the resource server.
func (a *asAttacker) active(tok string) bool {
	a.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.as.Issuer+"/introspect", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("rs", "rs-secret-0123456789")
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Active bool `json:"active"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		a.t.Fatalf("introspect: %d %v", resp.StatusCode, err)
	}
	return m.Active
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// TestCodeAttacksAS: a replayed code, a code for another client, and the
// PKCE downgrades (OAuth 2.1 §4.1.3, §7.5; RFC 9700 §4.5, §4.8;
// requirements AS-04, AS-09, CIMD-09).
func TestCodeAttacksAS(t *testing.T) {
	t.Parallel()
	a := newASAttacker(t, nil)
	v := pkce.GenerateVerifier()
	a.sec.Add(v)

	t.Run("AS-09 replayed code revokes what it produced", func(t *testing.T) {
		code := a.code("app", appRedirect, v)
		status, first := a.redeem("app", code, appRedirect, v)
		if status != 200 {
			t.Fatalf("first redemption: %d %v", status, first)
		}
		if status, m := a.redeem("app", code, appRedirect, v); status != 400 || str(m, "error") != "invalid_grant" {
			t.Errorf("replay: %d %v", status, m)
		}
		if a.active(str(first, "access_token")) {
			t.Error("AS-09: the access token of a replayed code is still active")
		}
		if status, m := a.refresh("app", str(first, "refresh_token")); status != 400 || str(m, "error") != "invalid_grant" {
			t.Errorf("AS-09: the refresh token of a replayed code still works: %d %v", status, m)
		}
	})
	t.Run("CIMD-09 code issued to app redeemed by other", func(t *testing.T) {
		code := a.code("app", appRedirect, v)
		if status, m := a.redeem("other", code, "https://other.example.com/cb", v); status != 400 || str(m, "error") != "invalid_grant" {
			t.Errorf("%d %v", status, m)
		}
	})
	t.Run("AS-09 code redeemed with another redirect_uri", func(t *testing.T) {
		code := a.code("app", appRedirect, v)
		if status, m := a.redeem("app", code, "http://127.0.0.1/cb", v); status != 400 || str(m, "error") != "invalid_grant" {
			t.Errorf("%d %v", status, m)
		}
	})
	for _, tc := range []struct {
		name     string
		verifier string
	}{
		{"AS-04 wrong verifier", pkce.GenerateVerifier()},
		{"AS-04 missing verifier", ""},
		{"AS-04 the challenge itself as verifier (plain downgrade)", pkce.Challenge(v)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := a.code("app", appRedirect, v)
			if status, m := a.redeem("app", code, appRedirect, tc.verifier); status != 400 || (str(m, "error") != "invalid_grant" && str(m, "error") != "invalid_request") {
				t.Errorf("%d %v", status, m)
			}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(q url.Values)
		code string
	}{
		{"AS-04 code_challenge_method plain", func(q url.Values) { q.Set("code_challenge_method", "plain"); q.Set("code_challenge", v) }, "invalid_request"},
		{"AS-04 no code_challenge", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "invalid_request"},
		{"AS-04 malformed code_challenge", func(q url.Values) { q.Set("code_challenge", "short") }, "invalid_request"},
		{"AS-01 implicit grant", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"AS-08 resource with a fragment", func(q url.Values) { q.Set("resource", mcpResource+"#x") }, "invalid_target"},
		{"AS-08 relative resource", func(q url.Values) { q.Set("resource", "/mcp") }, "invalid_target"},
		{"scope not offered", func(q url.Values) { q.Set("scope", "root") }, "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := authzQuery("app", appRedirect, v)
			tc.edit(q)
			_, loc, _ := a.authorize(q)
			if loc == nil || loc.Query().Get("error") != tc.code || loc.Query().Get("code") != "" {
				t.Fatalf("Location %v; want an error redirect %s without a code", loc, tc.code)
			}
			if loc.Query().Get("iss") != a.as.Issuer || loc.Query().Get("state") != "st-0123456789" {
				t.Errorf("AS-06/AS-07: error redirect lacks iss or state: %v", loc)
			}
		})
	}
	a.sec.Check(t)
}

// TestOpenRedirectAS: a client_id or redirect_uri an attacker controls
// never turns the authorization endpoint into an open redirector (OAuth 2.1
// §7.12; requirements AS-05, CIMD-08): 400 with an error page and no
// Location, whatever else is wrong with the request.
func TestOpenRedirectAS(t *testing.T) {
	t.Parallel()
	a := newASAttacker(t, nil)
	v := pkce.GenerateVerifier()
	for _, tc := range []struct{ name, client, redirect string }{
		{"foreign host", "app", "https://evil.example.com/cb"},
		{"query appended", "app", appRedirect + "?x=1"},
		{"fragment appended", "app", appRedirect + "#x"},
		{"path traversal", "app", "https://app.example.com/cb/../../evil"},
		{"path suffix", "app", appRedirect + "/evil"},
		{"host suffix", "app", "https://app.example.com.evil.example.com/cb"},
		{"userinfo trick", "app", "https://app.example.com@evil.example.com/cb"},
		{"other port on a non-loopback host", "app", "https://app.example.com:8443/cb"},
		{"upper-case host", "app", "https://APP.example.com/cb"},
		{"plain http of the registered https URI", "app", "http://app.example.com/cb"},
		{"localhost for a registered 127.0.0.1", "app", "http://localhost/cb"},
		{"[::1] for a registered 127.0.0.1", "app", "http://[::1]/cb"},
		{"javascript: redirect", "app", "javascript:alert(1)"},
		{"unknown client", "nobody", "https://evil.example.com/cb"},
		{"another client's redirect URI", "app", "https://other.example.com/cb"},
		{"missing redirect_uri with several registered", "app", ""},
	} {
		t.Run("AS-05 "+tc.name, func(t *testing.T) {
			q := authzQuery(tc.client, tc.redirect, v)
			q.Set("response_type", "token") // an error that would be redirected if the URI were trusted
			if tc.redirect == "" {
				q.Del("redirect_uri")
			}
			status, loc, _ := a.authorize(q)
			if status != http.StatusBadRequest || loc != nil {
				t.Errorf("status %d, Location %v; want 400 without Location", status, loc)
			}
		})
	}
	t.Run("AS-05 loopback port exemption (positive control)", func(t *testing.T) {
		_, loc, _ := a.authorize(authzQuery("app", "http://127.0.0.1:53120/cb", v))
		if loc == nil || loc.Host != "127.0.0.1:53120" || loc.Query().Get("code") == "" {
			t.Errorf("Location %v", loc)
		}
	})
	a.sec.Check(t)
}

// TestRefreshReuseAS: a stolen refresh token used after its owner
// rotated it (RFC 9700 §4.14; OAuth 2.1 §4.3.1; requirement AS-12): the
// reuse fails and revokes the whole family, including the access token
// and the refresh token the owner holds now.
func TestRefreshReuseAS(t *testing.T) {
	t.Parallel()
	a := newASAttacker(t, nil)
	v := pkce.GenerateVerifier()
	_, first := a.redeem("app", a.code("app", appRedirect, v), appRedirect, v)
	rt1 := str(first, "refresh_token")
	status, second := a.refresh("app", rt1)
	if status != 200 || str(second, "refresh_token") == "" || str(second, "refresh_token") == rt1 {
		t.Fatalf("rotation: %d %v", status, second)
	}
	if status, m := a.refresh("app", rt1); status != 400 || str(m, "error") != "invalid_grant" {
		t.Errorf("reuse of the rotated token: %d %v", status, m)
	}
	if status, m := a.refresh("app", str(second, "refresh_token")); status != 400 || str(m, "error") != "invalid_grant" {
		t.Errorf("AS-12: the current refresh token survived a reuse: %d %v", status, m)
	}
	if a.active(str(second, "access_token")) {
		t.Error("AS-12: the family's access token survived a reuse")
	}
	if status, m := a.refresh("other", str(second, "refresh_token")); status != 400 {
		t.Errorf("refresh by another client: %d %v", status, m)
	}
	a.sec.Check(t)
}

// TestCIMDAttacksAS: a hostile client hosts its Client ID Metadata
// Document so as to lie, overflow, redirect or point the server at
// internal addresses (CIMD §SSRF, §Max Response Size; MCP Security Best
// Practices "SSRF"; requirements CIMD-02…CIMD-05, CIMD-07). Every refusal
// is an error page without a redirect; internal names have no listener, so
// a dial there fails the test.
func TestCIMDAttacksAS(t *testing.T) {
	t.Parallel()
	doc := func(clientID string) map[string]any {
		return map[string]any{"client_id": clientID, "client_name": "App", "redirect_uris": []string{appRedirect},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code"}, "response_types": []string{"code"}}
	}
	serveJSON := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(v)
		}
	}
	const base = "https://app.example.com"
	a := newASAttacker(t, func(n *vnet, c *authserver.Config) {
		n.Internal("internal.example.com", "10.0.0.5")
		n.Internal("loopback.example.com", "127.0.0.1")
		n.Internal("metadata.example.com", "169.254.169.254")
		r, err := clientmeta.NewResolver(*nethook.Set(&clientmeta.ResolverConfig{TLSConfig: n.TLS()}, nethook.Net{Resolver: n, Dial: n.Dial}))
		if err != nil {
			t.Fatal(err)
		}
		c.ClientMetadata = r
	})
	withSecret := doc(base + "/secret.json")
	withSecret["client_secret"] = "cimd-secret-0123456789"
	withSecret["token_endpoint_auth_method"] = "client_secret_post"
	a.sec.Add("cimd-secret-0123456789")
	mux := http.NewServeMux()
	mux.HandleFunc("/good.json", serveJSON(doc(base+"/good.json")))
	mux.HandleFunc("/liar.json", serveJSON(doc(base+"/good.json")))
	mux.HandleFunc("/slash.json", serveJSON(doc(base+"/slash.json/")))
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, r *http.Request) {
		d := doc(base + "/big.json")
		d["client_name"] = strings.Repeat("A", 6<<10)
		serveJSON(d)(w, r)
	})
	mux.HandleFunc("/redirect.json", redirectTo(base+"/good.json"))
	mux.HandleFunc("/internal.json", redirectTo("https://internal.example.com/client.json"))
	mux.HandleFunc("/html.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		json.NewEncoder(w).Encode(doc(base + "/html.json"))
	})
	mux.HandleFunc("/secret.json", serveJSON(withSecret))
	mux.HandleFunc("/evil-redirect.json", serveJSON(func() map[string]any {
		d := doc(base + "/evil-redirect.json")
		d["redirect_uris"] = []string{"https://evil.example.com/cb"}
		return d
	}()))
	a.n.Serve("app.example.com", mux)
	v := pkce.GenerateVerifier()
	for _, tc := range []struct{ name, clientID string }{
		{"CIMD-02 document names another client_id", base + "/liar.json"},
		{"CIMD-02 document client_id differs by a trailing slash", base + "/slash.json"},
		{"CIMD-04 document over 5 KB", base + "/big.json"},
		{"CIMD-04 document behind a redirect", base + "/redirect.json"},
		{"CIMD-05 document redirect to an internal name", base + "/internal.json"},
		{"CIMD-04 document served as text/html", base + "/html.json"},
		{"CIMD-03 document with a shared secret", base + "/secret.json"},
		{"CIMD-08 redirect_uri not in the document", base + "/evil-redirect.json"},
		{"CIMD-05 client_id on a name resolving to 10.0.0.5", "https://internal.example.com/client.json"},
		{"CIMD-05 client_id on a name resolving to 127.0.0.1", "https://loopback.example.com/client.json"},
		{"CIMD-05 client_id on a name resolving to 169.254.169.254", "https://metadata.example.com/client.json"},
		{"CIMD-05 client_id on an IP literal", "https://10.0.0.5/client.json"},
		{"CIMD-01 client_id over plain http", "http://app.example.com/good.json"},
		{"CIMD-01 client_id with dot segments", base + "/x/../good.json"},
		{"CIMD-01 client_id with userinfo", "https://u:p@app.example.com/good.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, loc, _ := a.authorize(authzQuery(tc.clientID, appRedirect, v))
			if status != http.StatusBadRequest || loc != nil {
				t.Errorf("status %d Location %v; want an error page without a redirect (CIMD-07)", status, loc)
			}
		})
	}
	t.Run("CIMD positive control", func(t *testing.T) {
		code := a.code(base+"/good.json", appRedirect, v)
		if status, m := a.redeem(base+"/good.json", code, appRedirect, v); status != 200 {
			t.Errorf("%d %v", status, m)
		}
	})
	a.sec.Check(t)
}

// TestRememberedConsentAS replays FastMCP's GHSA-6x8h-498w-gv8c against
// the authorization server with RememberConsent. The victim once approved
// the client https://app.example.com/client.json (a Client ID Metadata
// Document: the same client_id at every authorization server) in their
// browser. The same client later starts a login at the attacker's
// authorization server, which so learns the client's redirect URI and
// state, and sends the victim's browser to our /authorize with them, the
// shared client_id and a PKCE challenge of its own. A client that does not
// check RFC 9207 "iss" would hand the resulting code to the attacker, who
// would redeem it with its verifier. The browser's fetch metadata says where
// the navigation came from: "cross-site" from the attacker's page, "none"
// when the attacker redirected the navigation the client started (the
// client opens the browser at the attacker's authorization endpoint),
// nothing at all in an old browser. Each gets the consent page, no code;
// the control (a navigation from our own site, which the attacker cannot
// make) shows that the remembered consent alone would have given the
// attacker tokens.
func TestRememberedConsentAS(t *testing.T) {
	t.Parallel()
	const clientID = "https://app.example.com/client.json"
	a := newASAttacker(t, func(n *vnet, c *authserver.Config) {
		r, err := clientmeta.NewResolver(*nethook.Set(&clientmeta.ResolverConfig{TLSConfig: n.TLS()}, nethook.Net{Resolver: n, Dial: n.Dial}))
		if err != nil {
			t.Fatal(err)
		}
		c.ClientMetadata = r
		c.Consent = authserver.ConsentPrompt
		c.RememberConsent = true
	})
	a.n.Serve("app.example.com", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": clientID, "client_name": "App", "redirect_uris": []string{appRedirect},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code"}, "response_types": []string{"code"}})
	}))
	jar, _ := cookiejar.New(nil)
	victim := &http.Client{Transport: a.n.Transport(), Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(q url.Values, site string) (int, *url.URL, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, a.as.Issuer+"/authorize?"+q.Encode(), nil)
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
			req.Header.Set("Sec-Fetch-Mode", "navigate")
			req.Header.Set("Sec-Fetch-Dest", "document")
		}
		resp, err := victim.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return resp.StatusCode, loc, string(body)
	}

	// The victim's own first login: the page, approved.
	v := pkce.GenerateVerifier()
	a.sec.Add(v)
	status, _, page := get(authzQuery(clientID, appRedirect, v), "none")
	form := url.Values{"action": {"approve"}}
	for _, m := range regexp.MustCompile(`name="(request|csrf_token)" value="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if status != http.StatusOK || form.Get("request") == "" {
		t.Fatalf("first authorization: %d, want the consent page", status)
	}
	req, _ := http.NewRequest(http.MethodPost, a.as.Issuer+"/consent", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.as.Issuer)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := victim.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), appRedirect+"?code=") {
		t.Fatalf("approval: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	// The attacker's request: the client's redirect URI and state, its own
	// challenge.
	attackerVerifier := pkce.GenerateVerifier()
	a.sec.Add(attackerVerifier)
	attack := authzQuery(clientID, appRedirect, attackerVerifier)
	attack.Set("state", "state-the-client-sent-the-attacker")
	for _, tc := range []struct{ name, site string }{
		{"from the attacker's page (cross-site)", "cross-site"},
		{"the attacker's redirect of the navigation the client started (none)", "none"},
		{"in a browser without fetch metadata", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, loc, body := get(attack, tc.site)
			a.sec.Seen(body)
			if status != http.StatusOK || loc.String() != "" || !strings.Contains(body, `value="approve"`) {
				t.Fatalf("status %d, Location %q; want the consent page and no code", status, loc)
			}
		})
	}
	t.Run("control: a navigation from our own site", func(t *testing.T) {
		status, loc, _ := get(attack, "same-origin")
		code := loc.Query().Get("code")
		if status != http.StatusFound || code == "" {
			t.Fatalf("status %d, Location %q; want the remembered consent to apply", status, loc)
		}
		a.sec.Add(code)
		if status, m := a.redeem(clientID, code, appRedirect, attackerVerifier); status != http.StatusOK {
			t.Fatalf("redeeming with the attacker's verifier: %d %v; the attack cases above would prove nothing", status, m)
		}
	})
	a.sec.Check(t)
}

// TestRequestObjectSSRFAS: a client hands the authorization server a
// request_uri (RFC 9101, PAR) or a request object pointing at internal
// addresses. The server supports neither, so it fetches nothing (a dial
// there fails the test) and never lets the object override the checked
// parameters.
func TestRequestObjectSSRFAS(t *testing.T) {
	t.Parallel()
	a := newASAttacker(t, func(n *vnet, _ *authserver.Config) {
		n.Internal("internal.example.com", "10.0.0.5")
	})
	v := pkce.GenerateVerifier()
	for _, extra := range []url.Values{
		{"request_uri": {"https://internal.example.com/request.jwt"}},
		{"request_uri": {"urn:ietf:params:oauth:request_uri:abc"}},
		{"request": {"eyJhbGciOiJub25lIn0.eyJyZWRpcmVjdF91cmkiOiJodHRwczovL2V2aWwuZXhhbXBsZS5jb20vY2IifQ."}},
	} {
		q := authzQuery("app", appRedirect, v)
		for k, vs := range extra {
			q[k] = vs
		}
		_, loc, _ := a.authorize(q)
		if loc != nil && loc.Host != "app.example.com" {
			t.Errorf("%v: redirected to %v", extra, loc)
		}
	}
	a.sec.Check(t)
}
