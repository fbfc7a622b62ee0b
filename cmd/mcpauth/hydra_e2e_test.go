//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Hydra cells: `mcpauth protect --issuer-profile hydra`, `mcpauth
// login`/`call` and the TypeScript SDK client against a real Ory Hydra
// v2.3.0 (tools/hydra, built by `make hydra`) in memory with JWT access
// tokens and our login and consent app.

// hydraCallback is the redirect URI of the test clients: nothing listens
// there, the flows stop at the redirect.
const hydraCallback = "http://127.0.0.1/callback"

// hydraStack is Hydra with `protect --issuer-profile hydra` in front of an
// upstream MCP server whose headers tool needs mcp:admin.
type hydraStack struct {
	h       *hydra
	protect *proc
	url     string // the MCP endpoint, also the resource and the audience
}

func startHydraStack(t *testing.T, extra ...string) *hydraStack {
	t.Helper()
	s := &hydraStack{h: startHydra(t)}
	up := newUpstream(t)
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"default":["mcp:tools"],"tools":{"headers":["mcp:admin"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"protect", "--addr", "127.0.0.1:0", "--upstream", up.srv.URL + "/mcp", "--insecure-http",
		"--scopes", "mcp:tools mcp:admin", "--policy", policy, "--issuer", s.h.issuer, "--issuer-profile", "hydra"}, extra...)
	s.protect = startProc(t, args...)
	s.url = firstURL.FindStringSubmatch(s.protect.ready)[1] + "/mcp"
	return s
}

// mcpCall sends one hand-made 2026-07-28 request (tools/list, or
// tools/call of tool) with tok and returns the status, the
// WWW-Authenticate header and the body.
func mcpCall(t *testing.T, u, tok, tool string) (int, string, string) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"script","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
	method, body := "tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`
	if tool != "" {
		args := `{}`
		if tool == "echo" {
			args = `{"message":"hi"}`
		}
		method, body = "tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`,`+meta+`}}`
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method} {
		req.Header.Set(k, v)
	}
	if tool != "" {
		req.Header.Set("Mcp-Name", tool)
	}
	if tok == "" {
		req.Header.Del("Authorization")
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(data)
}

// TestE2EHydraProtect: protect with the hydra preset accepts Hydra's
// client-credentials and authorization-code JWT access tokens for its
// audience and enforces the per-tool scopes (403 insufficient_scope with
// the scope to ask for); it refuses a token Hydra minted for another
// audience or without one, and an ID token, even at a protect that names
// the ID token's audience (the client) as its own.
func TestE2EHydraProtect(t *testing.T) {
	t.Parallel()
	s := startHydraStack(t)
	const other = "https://other.example.com/mcp"
	m2m := s.h.createClient(t, map[string]any{"grant_types": []string{"client_credentials"}, "scope": "mcp:tools mcp:admin",
		"audience": []string{s.url, other}, "token_endpoint_auth_method": "client_secret_basic"})
	web := s.h.createClient(t, map[string]any{"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": "openid offline_access mcp:tools mcp:admin", "audience": []string{s.url}, "redirect_uris": []string{hydraCallback},
		"token_endpoint_auth_method": "none"})

	tools := s.h.clientCredentials(t, m2m, "mcp:tools", s.url).AccessToken
	admin := s.h.clientCredentials(t, m2m, "mcp:tools mcp:admin", s.url).AccessToken
	elsewhere := s.h.clientCredentials(t, m2m, "mcp:tools mcp:admin", other).AccessToken
	noAudience := s.h.clientCredentials(t, m2m, "mcp:tools mcp:admin", "").AccessToken
	code := s.h.authorizationCode(t, web, hydraCallback, "openid mcp:tools", s.url)
	if code.IDToken == "" {
		t.Fatal("no ID token from the authorization-code flow")
	}

	// The token shape the preset is for, as Hydra issues it.
	hdr, claims := jwtPart(t, tools, 0), jwtPart(t, tools, 1)
	if hdr["typ"] != "JWT" || claims["client_id"] != m2m.ID || claims["iss"] != s.h.issuer ||
		!slices.Equal(anyStrings(claims["scp"]), []string{"mcp:tools"}) || !slices.Equal(anyStrings(claims["aud"]), []string{s.url}) {
		t.Fatalf("hydra's access token: header %v claims %v", hdr, claims)
	}
	if idc := jwtPart(t, code.IDToken, 1); idc["client_id"] != nil || !slices.Contains(anyStrings(idc["aud"]), web.ID) {
		t.Fatalf("hydra's ID token: %v", idc)
	}

	cells := []struct {
		name, tok, tool string
		status          int
		challenge       []string // substrings of WWW-Authenticate
		body            string
	}{
		{"client credentials, tools/list", tools, "", http.StatusOK, nil, `"echo"`},
		{"client credentials, echo", tools, "echo", http.StatusOK, nil, `"hi"`},
		{"client credentials without mcp:admin, headers", tools, "headers", http.StatusForbidden,
			[]string{`error="insufficient_scope"`, `scope="mcp:tools mcp:admin"`, `resource_metadata="`}, ""},
		{"client credentials with mcp:admin, headers", admin, "headers", http.StatusOK, nil, `user=` + m2m.ID + ` scopes=mcp:tools mcp:admin`},
		{"authorization code, echo", code.AccessToken, "echo", http.StatusOK, nil, `"hi"`},
		{"authorization code without mcp:admin, headers", code.AccessToken, "headers", http.StatusForbidden,
			[]string{`error="insufficient_scope"`, `mcp:admin`}, ""},
		{"token for another audience", elsewhere, "echo", http.StatusUnauthorized, []string{`error="invalid_token"`}, ""},
		{"token without an audience", noAudience, "echo", http.StatusUnauthorized, []string{`error="invalid_token"`}, ""},
		{"ID token as an access token", code.IDToken, "echo", http.StatusUnauthorized, []string{`error="invalid_token"`}, ""},
		{"no token", "", "echo", http.StatusUnauthorized, []string{`resource_metadata="`}, ""},
	}
	for _, c := range cells {
		status, challenge, body := mcpCall(t, s.url, c.tok, c.tool)
		ok := status == c.status && strings.Contains(body, c.body)
		for _, want := range c.challenge {
			ok = ok && strings.Contains(challenge, want)
		}
		if !ok {
			t.Errorf("%s: %d %q %.300s", c.name, status, challenge, body)
		}
	}
	// The headers tool saw the user of the authorization-code token: the
	// token is Hydra's for our test user, through the login app.
	if status, _, body := mcpCall(t, s.url, s.h.authorizationCode(t, web, hydraCallback, "mcp:tools mcp:admin", s.url).AccessToken, "headers"); status != http.StatusOK ||
		!strings.Contains(body, "user="+hydraUser) {
		t.Errorf("authorization code with mcp:admin, headers: %d %.300s", status, body)
	}

	// A protect that names the web client as an audience of its own would
	// take the ID token's aud; the preset's client_id claim, in every
	// Hydra access token and in no ID token, still refuses it.
	lax := startProc(t, "protect", "--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp", "--insecure-http",
		"--issuer", s.h.issuer, "--issuer-profile", "hydra", "--issuer-audience", web.ID)
	laxURL := firstURL.FindStringSubmatch(lax.ready)[1] + "/mcp"
	if status, challenge, _ := mcpCall(t, laxURL, code.IDToken, "echo"); status != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) {
		t.Errorf("ID token at a protect whose audience is the client: %d %q", status, challenge)
	}
	if jwtPattern.MatchString(s.protect.stderr.String()) || jwtPattern.MatchString(lax.stderr.String()) {
		t.Error("protect logged a token")
	}
}

// ccRequest reports whether body is a client-credentials token request for
// exactly scope, with audience.
func ccRequest(body, scope, audience string) bool {
	f, err := url.ParseQuery(body)
	return err == nil && f.Get("grant_type") == "client_credentials" && f.Get("scope") == scope && f.Get("audience") == audience
}

// anyStrings is a JSON string or array of strings as a slice.
func anyStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// TestE2EHydraLoginCall: `mcpauth login` and `call` complete against Hydra
// through protect: the CLI's own authorization-code flow with PKCE (driven
// headlessly by --browser http through our login and consent app), the
// pre-registered public client, and --auth-param audience so that Hydra
// puts the resource in aud; a call to a tool that needs more scope steps
// up through Hydra again.
func TestE2EHydraLoginCall(t *testing.T) {
	t.Parallel()
	s := startHydraStack(t)
	web := s.h.createClient(t, map[string]any{"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": "openid offline offline_access mcp:tools mcp:admin", "audience": []string{s.url}, "redirect_uris": []string{hydraCallback},
		"token_endpoint_auth_method": "none"})
	common := []string{"--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "tokens.json"),
		"--client-id", web.ID, "--auth-param", "audience=" + s.url}
	cmd := func(name string, rest ...string) []string { return append(append([]string{name}, common...), rest...) }

	if code, out, errOut := runBin(t, "", cmd("login", s.url)...); code != 0 || !strings.Contains(out, "logged in") {
		t.Fatalf("login: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runBin(t, "", cmd("call", s.url, "echo", "--args", `{"message":"through hydra"}`)...)
	if code != 0 || !strings.Contains(out, `"text": "through hydra"`) {
		t.Fatalf("call echo: %d %s %s", code, out, errOut)
	}
	code, out, errOut = runBin(t, "", cmd("call", s.url, "headers")...)
	if code != 0 || !strings.Contains(out, "user="+hydraUser+" scopes=mcp:tools mcp:admin") {
		t.Fatalf("call headers (step-up to mcp:admin): %d %s %s", code, out, errOut)
	}
	code, tok, errOut := runBin(t, "", cmd("token", s.url)...)
	if code != 0 {
		t.Fatalf("token: %d %s", code, errOut)
	}
	claims := jwtPart(t, strings.TrimSpace(tok), 1)
	if claims["client_id"] != web.ID || !slices.Equal(anyStrings(claims["aud"]), []string{s.url}) || claims["sub"] != hydraUser {
		t.Errorf("the CLI's token: %v", claims)
	}
	for _, o := range []string{out, errOut, s.protect.stderr.String()} {
		if jwtPattern.MatchString(o) {
			t.Error("a token was printed or logged")
		}
	}
}

// hydraInteropReport is what tools/interop/hydra.mjs prints.
type hydraInteropReport struct {
	Tools            []string `json:"tools"`
	Echo             string   `json:"echo"`
	Headers          string   `json:"headers"`
	TokenAud         []string `json:"tokenAud"`
	TokenScp         []string `json:"tokenScp"`
	MetadataRequests []string `json:"metadataRequests"`
	TokenRequests    []struct {
		URL  string `json:"url"`
		Body string `json:"body"`
	} `json:"tokenRequests"`
}

// TestE2EHydraInteropTypeScriptSDK: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned in tools/interop) as the reference
// host, through protect in front of Hydra: its ClientCredentialsProvider
// finds Hydra from protect's challenge and metadata and gets a token with
// the client-credentials grant for the challenge's scope, with the audience
// Hydra needs added to its token request (tools/interop/hydra.mjs); it lists
// tools, calls echo, and on headers' 403 insufficient_scope gets a second
// token for the wider scope through the SDK's own step-up path.
func TestE2EHydraInteropTypeScriptSDK(t *testing.T) {
	t.Parallel()
	needInteropTools(t, "@modelcontextprotocol/client")
	s := startHydraStack(t)
	m2m := s.h.createClient(t, map[string]any{"grant_types": []string{"client_credentials"}, "scope": "mcp:tools mcp:admin",
		"audience": []string{s.url}, "token_endpoint_auth_method": "client_secret_basic"})
	node, err := filepath.Abs(interopNode)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "hydra.mjs", s.url, s.h.issuer, m2m.ID, s.url)
	cmd.Dir = interopDir
	cmd.Env = append(os.Environ(), "HYDRA_CLIENT_SECRET="+m2m.Secret)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hydra.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r hydraInteropReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("report: %v: %s", err, stdout.String())
	}
	t.Logf("report: %s", bytes.TrimSpace(stdout.Bytes()))
	checks := []struct {
		name string
		ok   bool
	}{
		{"the SDK read Hydra's metadata", len(r.MetadataRequests) > 0},
		{"two client-credentials token requests to Hydra's token endpoint, the challenge's scope and then the step-up's, each with the audience",
			len(r.TokenRequests) == 2 && r.TokenRequests[0].URL == s.h.issuer+"/oauth2/token" && r.TokenRequests[1].URL == s.h.issuer+"/oauth2/token" &&
				ccRequest(r.TokenRequests[0].Body, "mcp:tools", s.url) && ccRequest(r.TokenRequests[1].Body, "mcp:tools mcp:admin", s.url)},
		{"tools listed", slices.Equal(r.Tools, []string{"echo", "headers", "slow"})},
		{"echo answered", r.Echo == "hello"},
		{"headers answered as the client, with both scopes", r.Headers == "user="+m2m.ID+` scopes=mcp:tools mcp:admin authorization=""`},
		{"Hydra's token for this resource", slices.Equal(r.TokenAud, []string{s.url}) && slices.Contains(r.TokenScp, "mcp:admin")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: no", c.name)
		}
	}
	if jwtPattern.MatchString(stderr.String()) {
		t.Error("a token in the script's error output")
	}
}

// TestE2EHydraCheckIdP: `mcpauth check --idp` grades Hydra from its
// metadata, recognises it, verifies a client-credentials token of it with
// the hydra preset and prints the protect and login flags and the Hydra
// settings that make it work; a token without the audience fails the check
// and says what to ask for.
func TestE2EHydraCheckIdP(t *testing.T) {
	t.Parallel()
	s := startHydraStack(t)
	m2m := s.h.createClient(t, map[string]any{"grant_types": []string{"client_credentials"}, "scope": "mcp:tools",
		"audience": []string{s.url}, "token_endpoint_auth_method": "client_secret_basic"})
	good := s.h.clientCredentials(t, m2m, "mcp:tools", s.url).AccessToken
	bad := s.h.clientCredentials(t, m2m, "mcp:tools", "").AccessToken

	code, out, errOut := runBin(t, good+"\n", "check", "--idp", s.h.issuer, "--resource", s.url, "--token", "-", "--insecure-http")
	if code != 0 {
		t.Fatalf("check --idp: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("check --idp:\n%s", out)
	spaced := regexp.MustCompile(`[ \t]+`)
	flat := spaced.ReplaceAllString(out, " ")
	for _, want := range []string{
		"PASS CL-07 metadata issuer identical",
		"PASS AS-03 PKCE S256 advertised",
		"PASS IDP-02 signing keys published",
		"PASS IDP-03 provider recognised hydra",
		`PASS IDP-04 access token is a JWT typ "JWT"`,
		"PASS IDP-06 token accepted by a preset preset hydra",
		"preset: hydra (the token passed)",
		"--issuer " + s.h.issuer + " --issuer-profile hydra",
		"mcpauth login --client-id <registered client> --auth-param audience=" + s.url + " " + s.url,
		"strategies.access_token: jwt",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("check --idp: no line with %q", want)
		}
	}
	code, out, _ = runBin(t, bad+"\n", "check", "--idp", s.h.issuer, "--resource", s.url, "--token", "-", "--insecure-http")
	if code != 1 || !strings.Contains(spaced.ReplaceAllString(out, " "), "FAIL IDP-06 token accepted by a preset") || !strings.Contains(out, "the token's aud does not name "+s.url) {
		t.Errorf("check --idp with a token without audience: %d\n%s", code, out)
	}
	if jwtPattern.MatchString(out) {
		t.Error("check --idp printed the token")
	}
}
