//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/pkce"
)

// The preset matrix of resource/profile_matrix_test.go against tokens a real
// OpenID provider issues: panva oidc-provider (tools/interop/idpshapes.mjs)
// shapes its client-credentials JWT access tokens as Entra ID v1.0 and
// v2.0, Okta, Auth0, Keycloak (with and without an audience mapper) and
// Cognito document them, and `mcpauth protect --issuer-profile` accepts
// each preset's own shape and refuses its neighbours'.

// Identifiers idpshapes.mjs uses.
const (
	shapesTenantA  = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	shapesTenantB  = "fa15d692-e9c7-4460-a743-29f2956fd429"
	shapesEntraAPI = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
	shapesScopes   = "mcp:tools files:read"
)

// idpShapeClients are idpshapes.mjs's clients, one per token shape; the
// "-id" ones get the provider's ID token shape.
var idpShapeClients = []string{
	"rfc9068", "entra-v2", "entra-v2-app", "entra-v1", "okta", "auth0", "keycloak-mapper",
	"keycloak-nomapper", "keycloak-nomapper-other", "cognito", "cognito-other",
	"entra-v2-id", "okta-id", "auth0-id", "keycloak-id", "cognito-id",
}

// startIdPShapes starts idpshapes.mjs on a port the system picks and
// returns its base URL.
func startIdPShapes(t *testing.T) string {
	t.Helper()
	needInteropTools(t, "oidc-provider")
	node, err := filepath.Abs(interopNode)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "idpshapes.mjs", "0")
	cmd.Dir = interopDir
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case base := <-line:
		if strings.HasPrefix(base, "http://127.0.0.1:") {
			return base
		}
	case <-time.After(30 * time.Second):
	}
	t.Fatalf("idpshapes.mjs did not start; stderr: %s", stderr.String())
	return ""
}

// shapedToken gets a client-credentials access token of client (its
// shape) from issuer for resource.
func shapedToken(t *testing.T, issuer, client, resource string) string {
	t.Helper()
	return idpTokens(t, issuer, client, url.Values{"grant_type": {"client_credentials"}, "scope": {shapesScopes},
		"resource": {resource}}).AccessToken
}

// webCallback is the redirect URI of idpshapes.mjs's client "web": nothing
// listens there, the flow stops at the redirect.
const webCallback = "http://127.0.0.1:1/callback"

// realIDToken logs in at issuer (mounted under base) as alice through
// oidc-provider's development interactions, with the client "web", and
// returns the ID token the authorization code gets.
func realIDToken(t *testing.T, base, issuer string) string {
	t.Helper()
	verifier := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {"web"}, "redirect_uri": {webCallback}, "scope": {"openid"},
		"state": {"state-1"}, "nonce": {"nonce-1"}, "code_challenge": {pkce.Challenge(verifier)}, "code_challenge_method": {"S256"}}
	back, err := url.Parse(newUserAgent(t).atProvider(base, issuer+"/auth?"+q.Encode(), "alice", webCallback))
	if err != nil || back.Query().Get("code") == "" {
		t.Fatalf("authorization response %v: %v", back, err)
	}
	tok := idpTokens(t, issuer, "web", url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
		"redirect_uri": {webCallback}, "code_verifier": {verifier}})
	if tok.IDToken == "" {
		t.Fatalf("no ID token from %s", issuer)
	}
	return tok.IDToken
}

// idpTokens is a token request of client (client_secret_basic) at issuer.
func idpTokens(t *testing.T, issuer, client string, form url.Values) (out struct {
	AccessToken string `json:"access_token"`
	IDToken     string `json:"id_token"`
}) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, "secret-"+client)
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(body, &out); resp.StatusCode != http.StatusOK || err != nil || out.AccessToken == "" {
		t.Fatalf("token of %s from %s: %d %s", client, issuer, resp.StatusCode, body)
	}
	return out
}

// newWhoamiUpstream is an MCP server whose whoami tool answers with the
// identity protect forwarded.
func newWhoamiUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		h := req.Extra.Header
		return textResult(fmt.Sprintf("user=%s client=%s scopes=%s", h.Get(headerUser), h.Get(headerClientID), h.Get(headerScopes))), nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// Reasons protect gives in error_description, the resource package's.
const (
	refusedType     = "token type not accepted"
	refusedAudience = "token is not for this resource"
	refusedRequired = "required claim missing or different"
	refusedNoClient = "token names no client"
	refusedClient   = "client not accepted"
	refusedIssuer   = "issuer not accepted"
	refusedTenant   = "tenant not accepted"
	refusedKey      = "signing key is unknown"
)

// TestE2EIdPShapes: for each preset, `mcpauth protect --issuer-profile`
// with the flags its README recipe gives, in front of an MCP server, is sent
// every shape idpshapes.mjs issues from the preset's own issuer (so that
// only the shape differs). Its own shape is accepted (tools/list 200, and
// whoami sees the client and the scopes the preset reads); every other
// shape, the ID token shapes included, is refused with 401 invalid_token and
// the exact reason; an Entra token of another tenant is refused by its
// issuer, one naming another tenant in tid by its tenant, and with two
// tenants allowed, one signed by tenant B claiming tenant A by its key.
// Keycloak's tokens without an audience are refused unless
// --issuer-insecure-accept-missing-audience names the client, and then only
// that client's.
func TestE2EIdPShapes(t *testing.T) {
	t.Parallel()
	base := startIdPShapes(t)
	upstream := newWhoamiUpstream(t)
	idp := base + "/idp"
	entraV2A := base + "/" + shapesTenantA + "/v2.0"
	entraV2B := base + "/" + shapesTenantB + "/v2.0"
	entraV1A := base + "/v1/" + shapesTenantA

	// typed are the shapes with a typ header (refused where only "none" is
	// accepted); untyped those without (Okta's and Cognito's).
	typed := []string{"rfc9068", "entra-v2", "entra-v2-app", "entra-v1", "auth0", "keycloak-mapper", "keycloak-nomapper",
		"keycloak-nomapper-other", "entra-v2-id", "auth0-id", "keycloak-id"}
	untyped := []string{"okta", "cognito", "cognito-other", "okta-id", "cognito-id"}
	// The shapes as idpshapes.mjs issues them: the header typ ("" none)
	// and the claims the presets look at ("<absent>": no such member).
	const res, absent = "https://mcp.example.com/mcp", "<absent>"
	scopes := []any{"mcp:tools", "files:read"}
	marks := map[string]struct {
		typ    string
		claims map[string]any
	}{
		"rfc9068": {"at+jwt", map[string]any{"aud": res, "client_id": "rfc9068", "scope": shapesScopes}},
		"entra-v2": {"JWT", map[string]any{"aud": shapesEntraAPI, "azp": "entra-v2", "scp": shapesScopes, "ver": "2.0",
			"tid": shapesTenantA, "client_id": absent, "scope": absent}},
		"entra-v2-app": {"JWT", map[string]any{"aud": shapesEntraAPI, "azp": "entra-v2-app", "roles": scopes, "ver": "2.0",
			"tid": shapesTenantA, "scp": absent, "client_id": absent}},
		"entra-v1": {"JWT", map[string]any{"aud": "api://" + shapesEntraAPI, "appid": "entra-v1", "scp": shapesScopes, "ver": "1.0",
			"tid": shapesTenantA, "azp": absent, "client_id": absent}},
		"okta": {"", map[string]any{"aud": res, "cid": "okta", "scp": scopes, "client_id": absent, "scope": absent}},
		"auth0": {"JWT", map[string]any{"aud": []any{res, base + "/idp/userinfo"}, "azp": "auth0", "scope": shapesScopes,
			"permissions": scopes, "client_id": absent}},
		"keycloak-mapper": {"JWT", map[string]any{"aud": res, "typ": "Bearer", "azp": "keycloak-mapper", "scope": shapesScopes,
			"client_id": absent}},
		"keycloak-nomapper": {"JWT", map[string]any{"aud": absent, "typ": "Bearer", "azp": "keycloak-nomapper", "scope": shapesScopes,
			"client_id": absent}},
		"keycloak-nomapper-other": {"JWT", map[string]any{"aud": absent, "typ": "Bearer", "azp": "keycloak-nomapper-other"}},
		"cognito":                 {"", map[string]any{"aud": absent, "client_id": "cognito", "token_use": "access", "scope": shapesScopes}},
		"cognito-other":           {"", map[string]any{"aud": absent, "client_id": "cognito-other", "token_use": "access"}},
		"entra-v2-id": {"JWT", map[string]any{"aud": shapesEntraAPI, "ver": "2.0", "tid": shapesTenantA, "azp": absent,
			"client_id": absent, "scp": absent}},
		"okta-id":     {"", map[string]any{"aud": "okta-id", "cid": absent, "scp": absent, "client_id": absent}},
		"auth0-id":    {"JWT", map[string]any{"aud": "auth0-id", "azp": absent, "scope": absent, "client_id": absent}},
		"keycloak-id": {"JWT", map[string]any{"aud": "keycloak-id", "typ": "ID", "scope": absent, "client_id": absent}},
		"cognito-id":  {"", map[string]any{"aud": "cognito-id", "token_use": "id", "scope": absent, "client_id": absent}},
	}
	t.Run("shapes", func(t *testing.T) {
		// oidc-provider's own ID token: aud the client, no client or
		// scope claim.
		id := realIDToken(t, base, idp)
		if hdr, claims := jwtPart(t, id, 0), jwtPart(t, id, 1); hdr["typ"] != nil || claims["aud"] != "web" || claims["iss"] != idp ||
			claims["client_id"] != nil || claims["azp"] != nil || claims["scope"] != nil {
			t.Errorf("oidc-provider's ID token: header %v claims %v", hdr, claims)
		}
		for _, c := range idpShapeClients {
			m, ok := marks[c]
			if !ok {
				t.Fatalf("shape %s has no marks", c)
			}
			tok := shapedToken(t, idp, c, res)
			hdr, claims := jwtPart(t, tok, 0), jwtPart(t, tok, 1)
			if typ, _ := hdr["typ"].(string); typ != m.typ || (m.typ == "") == (hdr["typ"] != nil) {
				t.Errorf("%s: header typ %v, want %q", c, hdr["typ"], m.typ)
			}
			if claims["iss"] != idp {
				t.Errorf("%s: iss %v, want %s", c, claims["iss"], idp)
			}
			for name, want := range m.claims {
				got, present := claims[name]
				if want == absent && present || want != absent && !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %s is %v, want %v", c, name, got, want)
				}
			}
		}
	})

	// entraWant is the entra preset's row: its access tokens accepted,
	// its ID token without azp refused.
	entraWant := func() map[string]string {
		return orRefused(orRefused(map[string]string{
			"entra-v2": "", "entra-v2-app": "",
			"entra-v2-id": refusedNoClient, "entra-v1": refusedAudience, "rfc9068": refusedType,
			"auth0": refusedRequired, "keycloak-mapper": refusedRequired,
		}, refusedAudience, typed), refusedType, untyped)
	}
	type foreign struct{ label, issuer, client, reason string }
	rows := []struct {
		name        string
		flags       []string // --issuer and the flags after it
		tokenIssuer string   // where the shapes are obtained
		want        map[string]string
		idToken     string    // the reason oidc-provider's own ID token is refused
		foreign     []foreign // tokens of other issuers
	}{
		{name: "rfc9068", flags: []string{"--issuer", idp}, idToken: refusedType, tokenIssuer: idp,
			want: orRefused(orRefused(map[string]string{"rfc9068": ""}, refusedType, typed), refusedType, untyped)},
		{name: "entra", idToken: refusedType, tokenIssuer: entraV2A,
			flags: []string{"--issuer", base + "/{tid}/v2.0", "--issuer-profile", "entra", "--issuer-audience", shapesEntraAPI,
				"--issuer-tenant", shapesTenantA},
			want: entraWant(),
			foreign: []foreign{
				{"entra-v2 of another tenant", entraV2B, "entra-v2", refusedIssuer},
				{"entra-v2 of the v1.0 issuer", entraV1A, "entra-v2", refusedIssuer},
				{"entra-v2 with the iss of tenant A and the tid of tenant B", entraV2A, "entra-v2-other-tid", refusedTenant},
			}},
		// Both tenants allowed: each tenant's issuer with its own keys.
		{name: "entra, two tenants", idToken: refusedType, tokenIssuer: entraV2A,
			flags: []string{"--issuer", base + "/{tid}/v2.0", "--issuer-profile", "entra", "--issuer-audience", shapesEntraAPI,
				"--issuer-tenant", shapesTenantA, "--issuer-tenant", shapesTenantB},
			want: entraWant(),
			foreign: []foreign{
				{"entra-v2 of tenant B", entraV2B, "entra-v2", ""},
				{"entra-v2 with the iss and tid of tenant A, signed by tenant B", entraV2B, "entra-v2-other-iss", refusedKey},
				{"entra-v2 with the iss of tenant A and the tid of tenant B", entraV2A, "entra-v2-other-tid", refusedTenant},
				{"entra-v2 of the v1.0 issuer", entraV1A, "entra-v2", refusedIssuer},
			}},
		{name: "entra-v1", idToken: refusedType, tokenIssuer: entraV1A,
			flags: []string{"--issuer", base + "/v1/{tid}", "--issuer-profile", "entra-v1", "--issuer-audience", "api://" + shapesEntraAPI,
				"--issuer-tenant", shapesTenantA},
			want: orRefused(orRefused(map[string]string{
				"entra-v1": "", "rfc9068": refusedType, "auth0": refusedRequired, "keycloak-mapper": refusedRequired,
			}, refusedAudience, typed), refusedType, untyped),
			foreign: []foreign{
				{"entra-v1 of the v2.0 issuer", entraV2A, "entra-v1", refusedIssuer},
			}},
		{name: "okta", flags: []string{"--issuer", idp, "--issuer-profile", "okta"}, idToken: refusedAudience, tokenIssuer: idp,
			want: orRefused(orRefused(map[string]string{"okta": ""}, refusedType, typed), refusedAudience, untyped)},
		// Keycloak's shape with an audience mapper is Auth0's (typ JWT,
		// azp, scope): only the issuer tells them apart.
		{name: "auth0", flags: []string{"--issuer", idp, "--issuer-profile", "auth0"}, idToken: refusedType, tokenIssuer: idp,
			want: orRefused(orRefused(map[string]string{"auth0": "", "keycloak-mapper": "", "rfc9068": refusedType},
				refusedAudience, typed), refusedType, untyped)},
		{name: "keycloak", flags: []string{"--issuer", idp, "--issuer-profile", "keycloak"}, idToken: refusedType, tokenIssuer: idp,
			want: orRefused(orRefused(map[string]string{"keycloak-mapper": "", "rfc9068": refusedRequired, "auth0": refusedRequired},
				refusedAudience, typed), refusedType, untyped)},
		{name: "keycloak without an audience mapper", idToken: refusedType, tokenIssuer: idp,
			flags: []string{"--issuer", idp, "--issuer-profile", "keycloak", "--issuer-insecure-accept-missing-audience",
				"--issuer-client", "keycloak-nomapper"},
			want: orRefused(orRefused(map[string]string{
				"keycloak-nomapper": "", "keycloak-nomapper-other": refusedClient, "keycloak-mapper": refusedClient,
				"rfc9068": refusedRequired, "auth0": refusedRequired,
			}, refusedAudience, typed), refusedType, untyped)},
		{name: "cognito", idToken: refusedAudience, tokenIssuer: idp,
			flags: []string{"--issuer", idp, "--issuer-profile", "cognito", "--issuer-insecure-accept-missing-audience",
				"--issuer-client", "cognito"},
			want: orRefused(orRefused(map[string]string{"cognito": "", "cognito-other": refusedClient, "okta": refusedRequired},
				refusedAudience, untyped), refusedType, typed)},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			for _, c := range idpShapeClients {
				if _, ok := row.want[c]; !ok {
					t.Fatalf("shape %s has no expected outcome", c)
				}
			}
			if len(row.want) != len(idpShapeClients) {
				t.Fatalf("%d expectations for %d shapes", len(row.want), len(idpShapeClients))
			}
			args := append([]string{"protect", "--addr", "127.0.0.1:0", "--upstream", upstream, "--insecure-http",
				"--scopes", shapesScopes, "--require", "mcp:tools"}, row.flags...)
			p := startProc(t, args...)
			mcpURL := firstURL.FindStringSubmatch(p.ready)[1] + "/mcp"
			cells := make([]foreign, 0, len(idpShapeClients)+len(row.foreign))
			for _, c := range idpShapeClients {
				cells = append(cells, foreign{c, row.tokenIssuer, c, row.want[c]})
			}
			cells = append(cells, foreign{"oidc-provider's ID token", row.tokenIssuer, "web", row.idToken})
			for _, f := range append(cells, row.foreign...) {
				var tok string
				if f.client == "web" {
					tok = realIDToken(t, base, f.issuer)
				} else {
					tok = shapedToken(t, f.issuer, f.client, mcpURL)
				}
				status, challenge, body := mcpCall(t, mcpURL, tok, "")
				if f.reason == "" {
					if status != http.StatusOK || !strings.Contains(body, `"whoami"`) {
						t.Errorf("%s: tools/list %d %s %s, want 200", f.label, status, challenge, body)
						continue
					}
					want := fmt.Sprintf("user=%s client=%s scopes=%s", f.client, f.client, shapesScopes)
					if status, _, body := mcpCall(t, mcpURL, tok, "whoami"); status != http.StatusOK || !strings.Contains(body, want) {
						t.Errorf("%s: whoami %d %s, want %q", f.label, status, body, want)
					}
					continue
				}
				wantChallenge := fmt.Sprintf(`error="invalid_token", error_description=%q`, f.reason)
				if status != http.StatusUnauthorized || !strings.Contains(challenge, wantChallenge) {
					t.Errorf("%s: %d %s, want 401 with %s", f.label, status, challenge, wantChallenge)
				}
			}
		})
	}
}

// orRefused sets reason for each of shapes m has no expectation for yet.
func orRefused(m map[string]string, reason string, shapes []string) map[string]string {
	for _, s := range shapes {
		if _, ok := m[s]; !ok {
			m[s] = reason
		}
	}
	return m
}
