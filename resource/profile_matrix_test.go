package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// Identifiers of the provider shapes in testdata/idp (the tenants and
// application IDs of Microsoft's own samples).
const (
	tenantA      = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	tenantB      = "fa15d692-e9c7-4460-a743-29f2956fd429"
	entraAPI     = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
	entraClient  = "75dbe77f-10a3-4e59-85fd-8c127544f17c"
	entraV2      = "https://login.microsoftonline.com/{tid}/v2.0"
	entraV1      = "https://sts.windows.net/{tid}/"
	cognitoApp   = "1example23456789"
	keycloakApp  = "mcp-client"
	oktaIssuer   = "https://example.okta.com/oauth2/aus1mcp"
	auth0Issuer  = "https://example.auth0.com/"
	kcIssuer     = "https://keycloak.example.com/realms/mcp"
	cognitoIss   = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
	hydraIssuer  = "https://hydra.example.com"
	rfc9068Issue = "https://as.example.com"
)

// idpShape is one file of testdata/idp: a token shape as a provider's
// documentation gives it (source), signed at test time.
type idpShape struct {
	Shape  string         `json:"shape"`
	Source string         `json:"source"`
	Header map[string]any `json:"header"`
	Claims map[string]any `json:"claims"`
}

func loadShapes(t testing.TB) map[string]idpShape {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "idp", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shapes in testdata/idp: %v", err)
	}
	shapes := map[string]idpShape{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s idpShape
		if err := json.Unmarshal(b, &s); err != nil || s.Source == "" || s.Claims["iss"] == nil {
			t.Fatalf("%s: not a shape with a source and an issuer: %v", f, err)
		}
		shapes[strings.TrimSuffix(filepath.Base(f), ".json")] = s
	}
	return shapes
}

// mint signs the shape as a token of issuer (a template is filled with
// the token's "tid", or tenant A), changed by mutate, under the shape's
// header.
func (s idpShape) mint(t testing.TB, key *oauthtest.Key, issuer string, mutate func(map[string]any)) string {
	t.Helper()
	c := maps.Clone(s.Claims)
	tid, _ := c["tid"].(string)
	if tid == "" {
		tid = tenantA
	}
	c["iss"] = strings.Replace(issuer, "{tid}", tid, 1)
	if mutate != nil {
		mutate(c)
	}
	h := oauthtest.Header{OmitType: true}
	if typ, ok := s.Header["typ"].(string); ok {
		h = oauthtest.Header{Type: typ}
	}
	return key.Sign(t, h, oauthtest.MustJSON(t, c))
}

// presetSetup is a Verifier for one issuer with a preset configured as its
// recipe in the README says.
type presetSetup struct {
	issuer  string
	profile resource.Profile
}

func presetSetups() map[string]presetSetup {
	return map[string]presetSetup{
		"rfc9068": {rfc9068Issue, resource.Profile{}},
		"entra": {entraV2, resource.Profile{Preset: "entra", Audiences: []string{entraAPI},
			TenantIDs: []string{tenantA}}},
		"entra-v1": {entraV1, resource.Profile{Preset: "entra-v1", Audiences: []string{"api://" + entraAPI},
			TenantIDs: []string{tenantA}}},
		"okta":     {oktaIssuer, resource.Profile{Preset: "okta"}},
		"auth0":    {auth0Issuer, resource.Profile{Preset: "auth0"}},
		"keycloak": {kcIssuer, resource.Profile{Preset: "keycloak"}},
		"keycloak-no-audience-mapper": {kcIssuer, resource.Profile{Preset: "keycloak",
			InsecureAcceptMissingAudience: true, ClientIDs: []string{keycloakApp}}},
		"cognito": {cognitoIss, resource.Profile{Preset: "cognito",
			InsecureAcceptMissingAudience: true, ClientIDs: []string{cognitoApp}}},
		"hydra": {hydraIssuer, resource.Profile{Preset: "hydra"}},
	}
}

func (p presetSetup) verifier(t testing.TB, key *oauthtest.Key) *resource.Verifier {
	t.Helper()
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers:  []resource.Issuer{{Issuer: p.issuer, Keys: keyset.Static{{ID: key.ID, Public: key.Public()}}, Profile: p.profile}},
		Now:      oauthtest.NewClock(oauthtest.Epoch()).Now,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v
}

// presetMatrix is what each preset's Verifier does with each shape
// re-issued by its own issuer (so that only the shape differs): nil for
// accepted, else the exact reason. A neighbour's shape is refused by the
// first check it fails, in the Verifier's order: typ, audience, required
// claims, tenant, client.
var presetMatrix = map[string]map[string]error{
	"rfc9068": {
		"rfc9068": nil, "auth0_rfc9068": nil,
		"entra_v2": resource.ErrTokenType, "entra_v2_app": resource.ErrTokenType, "entra_v2_id_token": resource.ErrTokenType,
		"entra_v2_other_tenant": resource.ErrTokenType, "entra_v1": resource.ErrTokenType,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"auth0": resource.ErrTokenType, "auth0_id_token": resource.ErrTokenType,
		"keycloak": resource.ErrTokenType, "keycloak_no_audience": resource.ErrTokenType,
		"keycloak_account_audience": resource.ErrTokenType, "keycloak_id_token": resource.ErrTokenType,
		"cognito": resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
		"hydra": resource.ErrTokenType, "hydra_no_audience": resource.ErrTokenType, "hydra_id_token": resource.ErrTokenType,
	},
	"entra": {
		"entra_v2": nil, "entra_v2_app": nil,
		"entra_v2_id_token":     resource.ErrNoClient,
		"entra_v2_other_tenant": resource.ErrIssuer, // the template is filled with allowed tenants only
		"entra_v1":              resource.ErrAudience,
		"rfc9068":               resource.ErrTokenType, "auth0_rfc9068": resource.ErrTokenType,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"auth0": resource.ErrRequiredClaim, "auth0_id_token": resource.ErrAudience,
		"keycloak": resource.ErrRequiredClaim, "keycloak_no_audience": resource.ErrAudience,
		"keycloak_account_audience": resource.ErrAudience, "keycloak_id_token": resource.ErrAudience,
		"cognito": resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
		"hydra": resource.ErrRequiredClaim, "hydra_no_audience": resource.ErrAudience, "hydra_id_token": resource.ErrAudience,
	},
	"entra-v1": {
		"entra_v1": nil,
		"entra_v2": resource.ErrAudience, "entra_v2_app": resource.ErrAudience, "entra_v2_id_token": resource.ErrAudience,
		"entra_v2_other_tenant": resource.ErrIssuer,
		"rfc9068":               resource.ErrTokenType, "auth0_rfc9068": resource.ErrTokenType,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"auth0": resource.ErrRequiredClaim, "auth0_id_token": resource.ErrAudience,
		"keycloak": resource.ErrRequiredClaim, "keycloak_no_audience": resource.ErrAudience,
		"keycloak_account_audience": resource.ErrAudience, "keycloak_id_token": resource.ErrAudience,
		"cognito": resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
		"hydra": resource.ErrRequiredClaim, "hydra_no_audience": resource.ErrAudience, "hydra_id_token": resource.ErrAudience,
	},
	"okta": {
		"okta":          nil,
		"okta_id_token": resource.ErrAudience,
		"rfc9068":       resource.ErrTokenType, "auth0_rfc9068": resource.ErrTokenType,
		"entra_v2": resource.ErrTokenType, "entra_v2_app": resource.ErrTokenType, "entra_v2_id_token": resource.ErrTokenType,
		"entra_v2_other_tenant": resource.ErrTokenType, "entra_v1": resource.ErrTokenType,
		"auth0": resource.ErrTokenType, "auth0_id_token": resource.ErrTokenType,
		"keycloak": resource.ErrTokenType, "keycloak_no_audience": resource.ErrTokenType,
		"keycloak_account_audience": resource.ErrTokenType, "keycloak_id_token": resource.ErrTokenType,
		"cognito": resource.ErrAudience, "cognito_id_token": resource.ErrAudience,
		"hydra": resource.ErrTokenType, "hydra_no_audience": resource.ErrTokenType, "hydra_id_token": resource.ErrTokenType,
	},
	"auth0": {
		"auth0": nil,
		// Keycloak's shape with an audience mapper is Auth0's (typ JWT,
		// azp, scope): only the issuer and its keys tell them apart.
		"keycloak":       nil,
		"auth0_id_token": resource.ErrAudience, "auth0_rfc9068": resource.ErrTokenType,
		"rfc9068":  resource.ErrTokenType,
		"entra_v2": resource.ErrAudience, "entra_v2_app": resource.ErrAudience, "entra_v2_id_token": resource.ErrAudience,
		"entra_v2_other_tenant": resource.ErrAudience, "entra_v1": resource.ErrAudience,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"keycloak_no_audience": resource.ErrAudience, "keycloak_account_audience": resource.ErrAudience,
		"keycloak_id_token": resource.ErrAudience,
		"cognito":           resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
		"hydra": resource.ErrNoClient, "hydra_no_audience": resource.ErrAudience, "hydra_id_token": resource.ErrAudience,
	},
	"keycloak": {
		"keycloak":             nil,
		"keycloak_no_audience": resource.ErrAudience, "keycloak_account_audience": resource.ErrAudience,
		"keycloak_id_token": resource.ErrAudience,
		"rfc9068":           resource.ErrRequiredClaim, "auth0_rfc9068": resource.ErrRequiredClaim,
		"entra_v2": resource.ErrAudience, "entra_v2_app": resource.ErrAudience, "entra_v2_id_token": resource.ErrAudience,
		"entra_v2_other_tenant": resource.ErrAudience, "entra_v1": resource.ErrAudience,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"auth0": resource.ErrRequiredClaim, "auth0_id_token": resource.ErrAudience,
		"cognito": resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
		"hydra": resource.ErrRequiredClaim, "hydra_no_audience": resource.ErrAudience, "hydra_id_token": resource.ErrAudience,
	},
	"keycloak-no-audience-mapper": {
		"keycloak": nil, "keycloak_no_audience": nil,
		"keycloak_account_audience": resource.ErrAudience, // an audience of someone else stays refused
		"keycloak_id_token":         resource.ErrAudience,
		"rfc9068":                   resource.ErrRequiredClaim, "auth0_rfc9068": resource.ErrRequiredClaim,
		"entra_v2": resource.ErrAudience, "entra_v2_app": resource.ErrAudience, "entra_v2_id_token": resource.ErrAudience,
		"entra_v2_other_tenant": resource.ErrAudience, "entra_v1": resource.ErrAudience,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"auth0": resource.ErrRequiredClaim, "auth0_id_token": resource.ErrAudience,
		"cognito": resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
		"hydra": resource.ErrRequiredClaim, "hydra_no_audience": resource.ErrRequiredClaim, "hydra_id_token": resource.ErrAudience,
	},
	"cognito": {
		"cognito":          nil,
		"cognito_id_token": resource.ErrAudience,
		"okta":             resource.ErrRequiredClaim, "okta_id_token": resource.ErrAudience,
		"rfc9068": resource.ErrTokenType, "auth0_rfc9068": resource.ErrTokenType,
		"entra_v2": resource.ErrTokenType, "entra_v2_app": resource.ErrTokenType, "entra_v2_id_token": resource.ErrTokenType,
		"entra_v2_other_tenant": resource.ErrTokenType, "entra_v1": resource.ErrTokenType,
		"auth0": resource.ErrTokenType, "auth0_id_token": resource.ErrTokenType,
		"keycloak": resource.ErrTokenType, "keycloak_no_audience": resource.ErrTokenType,
		"keycloak_account_audience": resource.ErrTokenType, "keycloak_id_token": resource.ErrTokenType,
		"hydra": resource.ErrTokenType, "hydra_no_audience": resource.ErrTokenType, "hydra_id_token": resource.ErrTokenType,
	},
	"hydra": {
		"hydra":             nil,
		"hydra_no_audience": resource.ErrAudience, "hydra_id_token": resource.ErrAudience,
		"rfc9068": resource.ErrTokenType, "auth0_rfc9068": resource.ErrTokenType,
		"entra_v2": resource.ErrAudience, "entra_v2_app": resource.ErrAudience, "entra_v2_id_token": resource.ErrAudience,
		"entra_v2_other_tenant": resource.ErrAudience, "entra_v1": resource.ErrAudience,
		"okta": resource.ErrTokenType, "okta_id_token": resource.ErrTokenType,
		"auth0": resource.ErrNoClient, "auth0_id_token": resource.ErrAudience,
		"keycloak": resource.ErrNoClient, "keycloak_no_audience": resource.ErrAudience,
		"keycloak_account_audience": resource.ErrAudience, "keycloak_id_token": resource.ErrAudience,
		"cognito": resource.ErrTokenType, "cognito_id_token": resource.ErrTokenType,
	},
}

// acceptedInfo is what golden/idp_accepted.json records of an accepted
// token: what the profile read.
type acceptedInfo struct {
	Issuer   string   `json:"iss"`
	Subject  string   `json:"sub"`
	ClientID string   `json:"client_id"`
	Tenant   string   `json:"tenant,omitempty"`
	Audience []string `json:"aud"`
	Scopes   []string `json:"scopes"`
}

// TestPresetMatrix: every preset against every documented token shape,
// each re-issued by the preset's own issuer: each preset accepts its
// provider's access tokens (what it read is golden JSON in
// testdata/idp_accepted.json, -update to rewrite) and refuses the other
// shapes (ID tokens, neighbours' tokens, a tenant not allowed, a missing
// audience) with the exact reason.
func TestPresetMatrix(t *testing.T) {
	t.Parallel()
	shapes := loadShapes(t)
	key := oauthtest.NewKey(t, oauthtest.RS256, "idp-key")
	accepted := map[string]acceptedInfo{}
	setups := presetSetups()
	for _, name := range slices.Sorted(maps.Keys(setups)) {
		setup := setups[name]
		want, ok := presetMatrix[name]
		if !ok {
			t.Fatalf("preset setup %s has no row in presetMatrix", name)
		}
		v := setup.verifier(t, key)
		for _, shape := range slices.Sorted(maps.Keys(shapes)) {
			wantErr, listed := want[shape]
			if !listed {
				t.Errorf("%s: shape %s has no expected outcome", name, shape)
				continue
			}
			info, err := v.Verify(context.Background(), shapes[shape].mint(t, key, setup.issuer, nil))
			switch {
			case wantErr == nil && err != nil:
				t.Errorf("%s accepts %s (%s): refused with %v", name, shape, shapes[shape].Shape, err)
			case wantErr != nil && !errors.Is(err, wantErr):
				t.Errorf("%s refuses %s (%s) with %v, want %v", name, shape, shapes[shape].Shape, err, wantErr)
			case wantErr == nil:
				accepted[name+" "+shape] = acceptedInfo{Issuer: info.Issuer, Subject: info.Subject, ClientID: info.ClientID,
					Tenant: info.Tenant, Audience: info.Audience, Scopes: info.Scopes}
			}
		}
		for shape := range want {
			if _, ok := shapes[shape]; !ok {
				t.Errorf("%s: presetMatrix names shape %s, which is not in testdata/idp", name, shape)
			}
		}
	}
	for _, p := range resource.Presets() {
		if _, ok := setups[p]; !ok {
			t.Errorf("preset %s is not in the matrix", p)
		}
	}
	golden.JSON(t, "idp_accepted.json", accepted)
}

// TestPresetRefusesMutations: the documented shapes changed in the one
// place a preset's check looks at, each refused with its reason.
func TestPresetRefusesMutations(t *testing.T) {
	t.Parallel()
	shapes := loadShapes(t)
	key := oauthtest.NewKey(t, oauthtest.RS256, "idp-key")
	setups := presetSetups()
	tests := []struct {
		name, preset, shape string
		mutate              func(map[string]any)
		want                error
	}{
		{"entra: iss of tenant A, tid of tenant B", "entra", "entra_v2", func(c map[string]any) {
			c["tid"] = tenantB
			c["iss"] = "https://login.microsoftonline.com/" + tenantA + "/v2.0"
		}, resource.ErrTenant},
		{"entra: no tid", "entra", "entra_v2", func(c map[string]any) { delete(c, "tid") }, resource.ErrTenant},
		{"entra: tid a number", "entra", "entra_v2", func(c map[string]any) { c["tid"] = 7 }, resource.ErrMalformedToken},
		{"entra: v1.0 token at the v2.0 issuer", "entra", "entra_v2", func(c map[string]any) { c["ver"] = "1.0" }, resource.ErrRequiredClaim},
		{"entra: ver a number", "entra", "entra_v2", func(c map[string]any) { c["ver"] = 2.0 }, resource.ErrRequiredClaim},
		{"entra: scp an array", "entra", "entra_v2", func(c map[string]any) { c["scp"] = []string{"mcp.tools"} }, nil},
		{"entra: scp with a quote", "entra", "entra_v2", func(c map[string]any) { c["scp"] = `mcp"tools` }, resource.ErrMalformedToken},
		{"entra: roles a string of roles", "entra", "entra_v2_app", func(c map[string]any) { c["roles"] = "mcp.tools" }, nil},
		{"entra: roles holding a number", "entra", "entra_v2_app", func(c map[string]any) { c["roles"] = []any{"mcp.tools", 1} }, resource.ErrMalformedToken},
		{"entra: role with a space", "entra", "entra_v2_app", func(c map[string]any) { c["roles"] = []string{"mcp tools"} }, resource.ErrMalformedToken},
		{"entra: aud the App ID URI (v1 style) at v2", "entra", "entra_v2", func(c map[string]any) { c["aud"] = "api://" + entraAPI }, resource.ErrAudience},
		{"entra: aud another API", "entra", "entra_v2", func(c map[string]any) { c["aud"] = entraClient }, resource.ErrAudience},
		{"entra: azp a number", "entra", "entra_v2", func(c map[string]any) { c["azp"] = 1 }, resource.ErrMalformedToken},
		{"entra-v1: appid missing", "entra-v1", "entra_v1", func(c map[string]any) { delete(c, "appid") }, resource.ErrNoClient},
		{"okta: scp missing", "okta", "okta", func(c map[string]any) { delete(c, "scp") }, nil},
		{"okta: cid missing", "okta", "okta", func(c map[string]any) { delete(c, "cid") }, resource.ErrNoClient},
		{"auth0: permissions an object", "auth0", "auth0", func(c map[string]any) { c["permissions"] = map[string]any{} }, resource.ErrMalformedToken},
		{"keycloak: claim typ ID", "keycloak", "keycloak", func(c map[string]any) { c["typ"] = "ID" }, resource.ErrRequiredClaim},
		{"keycloak: claim typ Refresh", "keycloak", "keycloak", func(c map[string]any) { c["typ"] = "Refresh" }, resource.ErrRequiredClaim},
		{"keycloak: DPoP-bound typ without DPoP", "keycloak", "keycloak", func(c map[string]any) {
			c["typ"] = "DPoP"
			c["cnf"] = map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
		}, resource.ErrBoundToken},
		{"keycloak without mapper: another client", "keycloak-no-audience-mapper", "keycloak_no_audience",
			func(c map[string]any) { c["azp"] = "other-client" }, resource.ErrClient},
		{"keycloak without mapper: no azp", "keycloak-no-audience-mapper", "keycloak_no_audience",
			func(c map[string]any) { delete(c, "azp") }, resource.ErrNoClient},
		{"keycloak without mapper: aud an empty list", "keycloak-no-audience-mapper", "keycloak_no_audience",
			func(c map[string]any) { c["aud"] = []string{} }, nil},
		{"cognito: ID token without aud", "cognito", "cognito", func(c map[string]any) { c["token_use"] = "id" }, resource.ErrRequiredClaim},
		{"cognito: no token_use", "cognito", "cognito", func(c map[string]any) { delete(c, "token_use") }, resource.ErrRequiredClaim},
		{"cognito: another app client", "cognito", "cognito", func(c map[string]any) { c["client_id"] = "2example" }, resource.ErrClient},
		{"cognito: aud of another resource", "cognito", "cognito", func(c map[string]any) { c["aud"] = "https://other.example/mcp" }, resource.ErrAudience},
		{"hydra: scp and scope both (strategies.jwt.scope_claim both)", "hydra", "hydra", func(c map[string]any) { c["scope"] = "mcp:tools files:read" }, nil},
		{"hydra: client_id missing", "hydra", "hydra", func(c map[string]any) { delete(c, "client_id") }, resource.ErrNoClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			setup := setups[tt.preset]
			v := setup.verifier(t, key)
			tok := shapes[tt.shape].mint(t, key, setup.issuer, tt.mutate)
			if _, err := v.Verify(context.Background(), tok); (tt.want == nil) != (err == nil) || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
