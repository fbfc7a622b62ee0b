package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// TestProfileConfig: an invalid profile is a configuration error that
// names the field.
func TestProfileConfig(t *testing.T) {
	t.Parallel()
	keys := keyset.Static{{ID: "k", Public: oauthtest.NewKey(t, oauthtest.ES256, "k").Public()}}
	tests := []struct {
		name    string
		issuer  string
		profile resource.Profile
		field   string
	}{
		{"unknown preset", "", resource.Profile{Preset: "entrra"}, "Profile.Preset"},
		{"preset in upper case", "", resource.Profile{Preset: "Okta"}, "Profile.Preset"},
		{"unknown type", "", resource.Profile{Types: []string{"jwt"}}, "Profile.Types"},
		{"empty type list", "", resource.Profile{Types: []string{}}, "Profile.Types"},
		{"type twice", "", resource.Profile{Types: []string{"JWT", "JWT"}}, "Profile.Types"},
		{"audience with a space", "", resource.Profile{Audiences: []string{"api://a b"}}, "Profile.Audiences"},
		{"empty audience", "", resource.Profile{Audiences: []string{""}}, "Profile.Audiences"},
		{"audience twice", "", resource.Profile{Audiences: []string{"x", "x"}}, "Profile.Audiences"},
		{"empty scope claim list", "", resource.Profile{ScopeClaims: []string{}}, "Profile.ScopeClaims"},
		{"scope claim with an empty name", "", resource.Profile{ScopeClaims: []string{"realm_access..roles"}}, "Profile.ScopeClaims"},
		{"scope claim not a pointer", "", resource.Profile{ScopeClaims: []string{"/a~2b"}}, "Profile.ScopeClaims"},
		{"scope claim aud", "", resource.Profile{ScopeClaims: []string{"aud"}}, "Profile.ScopeClaims"},
		{"scope claim too deep", "", resource.Profile{ScopeClaims: []string{"a.b.c.d.e.f.g.h.i"}}, "Profile.ScopeClaims"},
		{"client claim sub", "", resource.Profile{ClientClaim: "sub"}, "Profile.ClientClaim"},
		{"client claim cnf.jkt", "", resource.Profile{ClientClaim: "cnf.jkt"}, "Profile.ClientClaim"},
		{"required claim without values", "", resource.Profile{RequiredClaims: []resource.RequiredClaim{{Claim: "token_use"}}}, "Profile.RequiredClaims"},
		{"required claim with an empty value", "", resource.Profile{RequiredClaims: []resource.RequiredClaim{{Claim: "x", Values: []string{""}}}}, "Profile.RequiredClaims"},
		{"required claim twice", "", resource.Profile{RequiredClaims: []resource.RequiredClaim{{Claim: "x", Values: []string{"1"}}, {Claim: "x", Values: []string{"2"}}}}, "Profile.RequiredClaims"},
		{"required claim exp", "", resource.Profile{RequiredClaims: []resource.RequiredClaim{{Claim: "exp", Values: []string{"1"}}}}, "Profile.RequiredClaims"},
		{"tenant common", "", resource.Profile{TenantIDs: []string{"common"}}, "Profile.TenantIDs"},
		{"tenant organizations", "", resource.Profile{TenantIDs: []string{"organizations"}}, "Profile.TenantIDs"},
		{"tenant in upper case", "", resource.Profile{TenantIDs: []string{strings.ToUpper(tenantA)}}, "Profile.TenantIDs"},
		{"tenant twice", "", resource.Profile{TenantIDs: []string{tenantA, tenantA}}, "Profile.TenantIDs"},
		{"too many tenants", "", resource.Profile{TenantIDs: manyTenants(resource.MaxTenants + 1)}, "Profile.TenantIDs"},
		{"client ID with a newline", "", resource.Profile{ClientIDs: []string{"a\nb"}}, "Profile.ClientIDs"},
		{"missing audience without clients", "", resource.Profile{Preset: "keycloak", InsecureAcceptMissingAudience: true}, "Profile.InsecureAcceptMissingAudience"},
		{"entra without the API's client ID", "", resource.Profile{Preset: "entra", TenantIDs: []string{tenantA}}, "Profile.Audiences"},
		{"template without tenants", entraV2, resource.Profile{Preset: "entra", Audiences: []string{entraAPI}}, "Profile.TenantIDs"},
		{"template placeholder twice", "https://login.microsoftonline.com/{tid}/{tid}", resource.Profile{Preset: "entra",
			Audiences: []string{entraAPI}, TenantIDs: []string{tenantA}}, "Issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			iss := tt.issuer
			if iss == "" {
				iss = testIssuer
			}
			_, err := resource.New(resource.Config{Resource: testResource,
				Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keys}, {Issuer: testIssuer + "/x", Keys: keys}, {Issuer: iss, Keys: keys, Profile: tt.profile}}})
			if !errors.Is(err, resource.ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.field+":") || !strings.Contains(err.Error(), "issuers[2]") {
				t.Fatalf("error %q does not name issuers[2] and %s", err, tt.field)
			}
		})
	}
}

func manyTenants(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08x-0000-0000-0000-000000000000", i)
	}
	return out
}

// TestProfileEffective: a preset's values, the defaults without one, and
// overrides: a field set beside a preset replaces its value, a required
// claim replaces the preset's for the same claim and adds to the others.
func TestProfileEffective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   resource.Profile
		want resource.Profile
	}{
		{"no preset", resource.Profile{Types: []string{"JWT"}}, resource.Profile{Types: []string{"JWT"},
			ScopeClaims: []string{"scope"}, ClientClaim: "client_id"}},
		{"entra", resource.Profile{Preset: "entra", Audiences: []string{entraAPI}}, resource.Profile{Preset: "entra",
			Types: []string{"JWT"}, Audiences: []string{entraAPI}, ScopeClaims: []string{"scp", "roles"}, ClientClaim: "azp",
			RequiredClaims: []resource.RequiredClaim{{Claim: "ver", Values: []string{"2.0"}}}}},
		{"keycloak with realm roles and lower-case bearer", resource.Profile{Preset: "keycloak",
			ScopeClaims:    []string{"scope", "realm_access.roles"},
			RequiredClaims: []resource.RequiredClaim{{Claim: "typ", Values: []string{"Bearer", "bearer"}}, {Claim: "acr", Values: []string{"1"}}}},
			resource.Profile{Preset: "keycloak", Types: []string{"JWT", "at+jwt"}, ScopeClaims: []string{"scope", "realm_access.roles"},
				ClientClaim: "azp", RequiredClaims: []resource.RequiredClaim{{Claim: "typ", Values: []string{"Bearer", "bearer"}},
					{Claim: "acr", Values: []string{"1"}}}}},
		{"cognito, extra required claim kept beside token_use", resource.Profile{Preset: "cognito",
			RequiredClaims: []resource.RequiredClaim{{Claim: "version", Values: []string{"2"}}}},
			resource.Profile{Preset: "cognito", Types: []string{"none"}, ScopeClaims: []string{"scope"}, ClientClaim: "client_id",
				RequiredClaims: []resource.RequiredClaim{{Claim: "token_use", Values: []string{"access"}}, {Claim: "version", Values: []string{"2"}}}}},
		{"okta typed at+jwt", resource.Profile{Preset: "okta", Types: []string{"at+jwt"}}, resource.Profile{Preset: "okta",
			Types: []string{"at+jwt"}, ScopeClaims: []string{"scp"}, ClientClaim: "cid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.in.Effective()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Effective() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestProfileOverridesApply: overrides change what the Verifier accepts:
// realm roles read as scopes, a required value replaced, a type added.
func TestProfileOverridesApply(t *testing.T) {
	t.Parallel()
	shapes := loadShapes(t)
	key := oauthtest.NewKey(t, oauthtest.RS256, "idp-key")
	kc := presetSetup{kcIssuer, resource.Profile{Preset: "keycloak", ScopeClaims: []string{"scope", "realm_access.roles", "/resource_access/account/roles"},
		RequiredClaims: []resource.RequiredClaim{{Claim: "typ", Values: []string{"bearer"}}}}}
	v := kc.verifier(t, key)
	lower := shapes["keycloak"].mint(t, key, kcIssuer, func(c map[string]any) { c["typ"] = "bearer" })
	info, err := v.Verify(context.Background(), lower)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"openid", "profile", "mcp:tools", "default-roles-mcp", "offline_access", "uma_authorization", "manage-account", "view-profile"}
	if !reflect.DeepEqual(info.Scopes, want) {
		t.Errorf("scopes %v, want %v", info.Scopes, want)
	}
	if _, err := v.Verify(context.Background(), shapes["keycloak"].mint(t, key, kcIssuer, nil)); !errors.Is(err, resource.ErrRequiredClaim) {
		t.Errorf("typ Bearer after the override to bearer: %v", err)
	}
	okta := presetSetup{oktaIssuer, resource.Profile{Preset: "okta", Types: []string{"none", "JWT"}}}
	typed := shapes["okta"]
	typed.Header = map[string]any{"typ": "JWT"}
	if _, err := okta.verifier(t, key).Verify(context.Background(), typed.mint(t, key, oktaIssuer, nil)); err != nil {
		t.Errorf("okta with typ JWT added: %v", err)
	}
}

// TestProfiledVerifierKeepsRFC9068: an issuer without a profile is judged
// the same whether or not another issuer of the Verifier has one (the
// Verifier then decodes every token for profiles): the same reason for
// every refusal, the same identity for every acceptance.
func TestProfiledVerifierKeepsRFC9068(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	clock := oauthtest.NewClock(oauthtest.Epoch())
	newV := func(extra ...resource.Issuer) *resource.Verifier {
		v, err := resource.New(resource.Config{Resource: testResource, Now: clock.Now, DPoP: resource.DPoPConfig{Mode: resource.DPoPAllowed},
			Issuers: append([]resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}}, extra...)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = v.Close() })
		return v
	}
	plain := newV()
	mixed := newV(resource.Issuer{Issuer: hydraIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}},
		Profile: resource.Profile{Preset: "hydra"}})
	now := clock.Now()
	base := oauthtest.AccessToken{Issuer: testIssuer, Subject: "u", Audience: []string{testResource}, ClientID: "c",
		Scope: "mcp:tools a a", ID: "j", IssuedAt: now, Expiry: now.Add(time.Hour)}
	with := func(f func(*oauthtest.AccessToken)) oauthtest.AccessToken { c := base; f(&c); return c }
	tokens := map[string]string{
		"valid":                  key.Mint(t, base),
		"typ JWT":                key.MintWith(t, oauthtest.Header{Type: "JWT"}, base),
		"no typ":                 key.MintWith(t, oauthtest.Header{OmitType: true}, base),
		"typ application/at+jwt": key.MintWith(t, oauthtest.Header{Type: "application/at+jwt"}, base),
		"typ a number":           key.MintWith(t, oauthtest.Header{OmitType: true, Extra: map[string]any{"typ": 1}}, base),
		"aud other":              key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Audience = []string{"https://x.example/mcp"} })),
		"aud missing":            key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Audience = nil })),
		"aud upper case":         key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Audience = []string{"HTTPS://MCP.EXAMPLE.COM/mcp"} })),
		"scope an array":         key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Scope = ""; c.Extra = map[string]any{"scope": []string{"a"}} })),
		"scope a number":         key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Scope = ""; c.Extra = map[string]any{"scope": 1} })),
		"scope with a quote":     key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Scope = `a"b` })),
		"scope empty":            key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Scope = ""; c.Extra = map[string]any{"scope": ""} })),
		"scope null":             key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Scope = ""; c.Extra = map[string]any{"scope": nil} })),
		"five scopes":            key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Scope = "a b c d e" })),
		"client_id a number":     key.Mint(t, with(func(c *oauthtest.AccessToken) { c.ClientID = ""; c.Extra = map[string]any{"client_id": 7} })),
		"client_id missing":      key.Mint(t, with(func(c *oauthtest.AccessToken) { c.ClientID = "" })),
		"azp only":               key.Mint(t, with(func(c *oauthtest.AccessToken) { c.ClientID = ""; c.Extra = map[string]any{"azp": "c"} })),
		"expired":                key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Expiry = now.Add(-time.Hour) })),
		"issuer unknown":         key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Issuer = otherIssuer })),
		"duplicate scope names":  key.Sign(t, oauthtest.Header{}, []byte(`{"iss":"`+testIssuer+`","aud":"`+testResource+`","exp":`+itoa(now.Add(time.Hour).Unix())+`,"scope":"a","scope":"b"}`)),
		"duplicate nested names": key.Sign(t, oauthtest.Header{}, []byte(`{"iss":"`+testIssuer+`","aud":"`+testResource+`","exp":`+itoa(now.Add(time.Hour).Unix())+`,"x":{"a":1,"a":2}}`)),
		"cnf with jkt": key.Mint(t, with(func(c *oauthtest.AccessToken) {
			c.Extra = map[string]any{"cnf": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}
		})),
		"cnf a string":   key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"cnf": "x"} })),
		"tid ignored":    key.Mint(t, with(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"tid": 1} })),
		"payload [1]":    key.Sign(t, oauthtest.Header{}, []byte("[1]")),
		"b64 false":      key.MintWith(t, oauthtest.Header{Extra: map[string]any{"b64": false, "crit": []string{"b64"}}}, base),
		"unknown kid":    key.MintWith(t, oauthtest.Header{KeyID: "nope"}, base),
		"another signer": oauthtest.NewKey(t, oauthtest.ES256, "k1").Mint(t, base),
	}
	for name, tok := range tokens {
		a, errA := plain.Verify(context.Background(), tok)
		b, errB := mixed.Verify(context.Background(), tok)
		if (errA == nil) != (errB == nil) || reasonOf(errA) != reasonOf(errB) {
			t.Errorf("%s: %v without a profiled issuer, %v with one", name, errA, errB)
			continue
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Errorf("%s: %+v without a profiled issuer, %+v with one", name, a, b)
		}
	}
}

// TestIssuerTemplateKeys: an issuer template stands for one issuer per
// allowed tenant, each with its own metadata and keys, all listed in the
// metadata; a token of another tenant makes no fetch at all (its tid never
// chooses a URL), and one signed with another tenant's key is refused.
func TestIssuerTemplateKeys(t *testing.T) {
	t.Parallel()
	keyA, keyB := oauthtest.NewKey(t, oauthtest.RS256, "ka"), oauthtest.NewKey(t, oauthtest.RS256, "kb")
	var mu sync.Mutex
	var paths []string
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		key := map[string]*oauthtest.Key{tenantA: keyA, tenantB: keyB}
		for tid, k := range key {
			switch r.URL.Path {
			case "/" + tid + "/v2.0/.well-known/openid-configuration":
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"issuer": base + "/" + tid + "/v2.0", "authorization_endpoint": base + "/" + tid + "/authorize",
					"token_endpoint": base + "/" + tid + "/token", "jwks_uri": base + "/" + tid + "/keys"})
				return
			case "/" + tid + "/keys":
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{k.JWK()}})
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	clock := oauthtest.NewClock(oauthtest.Epoch())
	v, err := resource.New(resource.Config{Resource: "http://127.0.0.1/mcp", InsecureAllowHTTPLoopback: true, Now: clock.Now,
		Issuers: []resource.Issuer{{Issuer: base + "/{tid}/v2.0", Profile: resource.Profile{Preset: "entra",
			Audiences: []string{entraAPI}, TenantIDs: []string{tenantA, tenantB}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	shape := loadShapes(t)["entra_v2"]
	mint := func(k *oauthtest.Key, tid string) string {
		return shape.mint(t, k, base+"/{tid}/v2.0", func(c map[string]any) { c["tid"] = tid; c["iss"] = base + "/" + tid + "/v2.0" })
	}
	ctx := context.Background()
	if info, err := v.Verify(ctx, mint(keyA, tenantA)); err != nil || info.Tenant != tenantA {
		t.Fatalf("tenant A: %+v, %v", info, err)
	}
	if _, err := v.Verify(ctx, mint(keyB, tenantB)); err != nil {
		t.Fatalf("tenant B: %v", err)
	}
	if _, err := v.Verify(ctx, mint(keyB, tenantA)); !errors.Is(err, resource.ErrUnknownKey) && !errors.Is(err, resource.ErrSignature) {
		t.Errorf("tenant A's token signed with tenant B's key: %v", err)
	}
	mu.Lock()
	before := len(paths)
	mu.Unlock()
	const tenantC = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	if _, err := v.Verify(ctx, mint(keyA, tenantC)); !errors.Is(err, resource.ErrIssuer) {
		t.Errorf("tenant C: %v, want ErrIssuer", err)
	}
	mu.Lock()
	for _, p := range paths[before:] {
		t.Errorf("a token of a tenant not allowed fetched %s", p)
	}
	for _, p := range paths {
		if strings.Contains(p, tenantC) {
			t.Errorf("fetched %s", p)
		}
	}
	mu.Unlock()
	rec := httptest.NewRecorder()
	v.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, v.MetadataURL(), nil))
	var md oauthmeta.ProtectedResourceMetadata
	if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil {
		t.Fatal(err)
	}
	if want := []string{base + "/" + tenantA + "/v2.0", base + "/" + tenantB + "/v2.0"}; !reflect.DeepEqual(md.AuthorizationServers, want) {
		t.Errorf("authorization_servers %v, want %v", md.AuthorizationServers, want)
	}
}

// TestProfileScopesDecidePolicy: the per-tool policy judges the scopes the
// profile read: an Entra app-only token's roles, a delegated token's scp.
func TestProfileScopesDecidePolicy(t *testing.T) {
	t.Parallel()
	shapes := loadShapes(t)
	key := oauthtest.NewKey(t, oauthtest.RS256, "idp-key")
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers: []resource.Issuer{{Issuer: entraV2, Keys: keyset.Static{{ID: key.ID, Public: key.Public()}},
			Profile: resource.Profile{Preset: "entra", Audiences: []string{entraAPI}, TenantIDs: []string{tenantA}}}},
		Policy: &resource.Policy{Tools: map[string][]string{"write_file": {"mcp.tools"}, "read_file": {"files.read"}}},
		Now:    oauthtest.NewClock(oauthtest.Epoch()).Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	app := shapes["entra_v2_app"].mint(t, key, entraV2, nil)
	user := shapes["entra_v2"].mint(t, key, entraV2, nil)
	tests := []struct {
		name, token, tool string
		status            int
	}{
		{"app-only token, role granted", app, "write_file", http.StatusOK},
		{"app-only token, role missing", app, "read_file", http.StatusForbidden},
		{"delegated token, scp granted", user, "read_file", http.StatusOK},
		{"ID token", shapes["entra_v2_id_token"].mint(t, key, entraV2, nil), "write_file", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &seen{}
			rec := httptest.NewRecorder()
			req := mcpPost(tt.token, toolCall(tt.tool))
			v.Middleware(s.handler()).ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s %s", rec.Code, tt.status, rec.Header().Values("WWW-Authenticate"), rec.Body)
			}
			if tt.status == http.StatusOK && (s.info == nil || s.info.ClientID != entraClient || s.info.Tenant != tenantA) {
				t.Fatalf("handler saw %+v", s.info)
			}
			if tt.status == http.StatusForbidden && bearerChallenge(t, rec).Value("scope") != "files.read" {
				t.Fatalf("challenge %q", rec.Header().Values("WWW-Authenticate"))
			}
		})
	}
}

// reasonOf is the specific reason of a refusal, "" for nil.
func reasonOf(err error) string {
	var r *resource.Error
	if errors.As(err, &r) {
		return r.Reason
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// TestPresetsDocumented: the README's preset table has a row for every
// preset that names its types, scope claims, client claim and required
// values, as Effective gives them.
func TestPresetsDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok && strings.Contains(line, "](http") {
			name, _, _ = strings.Cut(name, "`")
			rows[name] = line
		}
	}
	for _, name := range resource.Presets() {
		row, ok := rows[name]
		if !ok {
			t.Errorf("README has no row for the preset %s", name)
			continue
		}
		p, err := resource.Profile{Preset: name, Audiences: []string{"x"}}.Effective()
		if err != nil {
			t.Fatal(err)
		}
		cells := strings.Split(row, "|")
		want := map[int][]string{2: {}, 4: {}, 5: {"`" + p.ClientClaim + "`"}, 6: {}}
		for _, ty := range p.Types {
			if ty == resource.TypeNone {
				want[2] = append(want[2], " none")
			} else {
				want[2] = append(want[2], "`"+ty+"`")
			}
		}
		for _, c := range p.ScopeClaims {
			want[4] = append(want[4], "`"+c+"`")
		}
		for _, r := range p.RequiredClaims {
			want[6] = append(want[6], "`"+r.Claim+"`")
			for _, v := range r.Values {
				want[6] = append(want[6], "`"+v+"`")
			}
		}
		for col, parts := range want {
			for _, part := range parts {
				if len(cells) <= col || !strings.Contains(cells[col], part) {
					t.Errorf("README row of %s: column %d lacks %s: %s", name, col, part, row)
				}
			}
		}
	}
}
