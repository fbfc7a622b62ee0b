package resource_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// FuzzProfileClaims signs fuzzed payloads as tokens of an Entra issuer
// (scopes from scp and roles, client in azp, ver and tid required) and
// checks every acceptance against a reference read of the payload: the
// issuer, ver "2.0" and the allowed tenant were there, ClientID is the
// string azp, the scopes are those of scp and roles in order without
// repeats, each a scope-token. Refusals are invalid_token, never a panic.
func FuzzProfileClaims(f *testing.F) {
	key := oauthtest.NewKey(f, oauthtest.ES256, "k1")
	issuer := "https://login.microsoftonline.com/" + tenantA + "/v2.0"
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers: []resource.Issuer{{Issuer: issuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}},
			Profile: resource.Profile{Preset: "entra", Audiences: []string{entraAPI}, TenantIDs: []string{tenantA}}}},
		Now:   oauthtest.NewClock(oauthtest.Epoch()).Now,
		Cache: resource.CacheConfig{Disabled: true},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = v.Close() })
	for name, s := range loadShapes(f) {
		if strings.HasPrefix(name, "entra_v2") {
			c := s.Claims
			c["iss"] = issuer
			f.Add(oauthtest.MustJSON(f, c))
		}
	}
	f.Add([]byte(`{"iss":"` + issuer + `","aud":"` + entraAPI + `","exp":1785589200,"ver":"2.0","tid":"` + tenantA +
		`","azp":"c","scp":"a b a","roles":["b","c"]}`))
	f.Add([]byte(`{"iss":"` + issuer + `","aud":"` + entraAPI + `","exp":1785589200,"ver":"2.0","tid":"` + tenantA +
		`","azp":"c","scp":["x"],"roles":"y z"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		tok := key.Sign(t, oauthtest.Header{Type: "JWT"}, payload)
		info, err := v.Verify(context.Background(), tok)
		if err != nil {
			if !errors.Is(err, resource.ErrInvalidToken) {
				t.Fatalf("refusal without invalid_token: %v", err)
			}
			return
		}
		var ref map[string]any
		if err := jsonv2.Unmarshal(payload, &ref); err != nil {
			t.Fatalf("accepted a payload that is not an object: %q", payload)
		}
		if ref["iss"] != issuer || ref["ver"] != "2.0" || ref["tid"] != tenantA || info.Tenant != tenantA {
			t.Fatalf("accepted iss %v ver %v tid %v (tenant %q)", ref["iss"], ref["ver"], ref["tid"], info.Tenant)
		}
		if azp, _ := ref["azp"].(string); azp == "" || info.ClientID != azp {
			t.Fatalf("ClientID %q, azp %v", info.ClientID, ref["azp"])
		}
		var want []string
		for _, claim := range []string{"scp", "roles"} {
			var vals []string
			switch x := ref[claim].(type) {
			case nil:
			case string:
				vals = strings.Split(x, " ")
			case []any:
				for _, e := range x {
					s, _ := e.(string)
					if !oauthmeta.ValidScopeToken(s) {
						t.Fatalf("accepted %s with %v", claim, x)
					}
					vals = append(vals, s)
				}
			default:
				t.Fatalf("accepted %s of type %T", claim, x)
			}
			for _, s := range vals {
				if s != "" && !slices.Contains(want, s) {
					if !oauthmeta.ValidScopeToken(s) {
						t.Fatalf("accepted scope %q", s)
					}
					want = append(want, s)
				}
			}
		}
		if !slices.Equal(info.Scopes, want) {
			t.Fatalf("scopes %q, reference %q", info.Scopes, want)
		}
	})
}
