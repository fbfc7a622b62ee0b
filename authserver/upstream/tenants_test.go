package upstream

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Tenants of the multi-tenant tests.
const (
	tenantA = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	tenantB = "0b5a1e6c-3f4d-4e2a-9c8b-7d6e5f4a3b2c"
	tenantC = "9188040d-6c67-4c5b-b112-36a304b66dad" // never allowed
)

// multiTenantHarness starts a server logging users in at a fake provider
// shaped like Entra ID's "organizations" endpoint, allowing tenants A and
// B (A spelled in upper case); claims bends each ID token's claims, which
// name tenant A by default.
func multiTenantHarness(t *testing.T, claims func(p *fakeProvider, c map[string]any)) (*harness, *fakeProvider) {
	var p *fakeProvider
	h := newHarness(t, "", func(c *testConfig) {
		p = newFakeProvider(t, c.Now)
		withUpstream(c, p)
		template := p.issuer + "/" + TenantPlaceholder + "/v2.0"
		p.issuerTemplate = template
		p.claims = func(req url.Values) map[string]any {
			c := p.defaultClaims(req)
			c["tid"], c["iss"] = tenantA, p.issuer+"/"+tenantA+"/v2.0"
			claims(p, c)
			return c
		}
		c.Upstream.Issuer = p.issuer + "/organizations/v2.0"
		c.Upstream.MultiTenant = &MultiTenant{IssuerTemplate: template, Tenants: []string{strings.ToUpper(tenantA), tenantB}}
		c.Upstream.Allow = authserver.AllowList{AllowAnyUser: true}
	})
	return h, p
}

// tenantIssuer is the issuer of tenant tid at p.
func tenantIssuer(p *fakeProvider, tid string) string { return p.issuer + "/" + tid + "/v2.0" }

// TestUpstreamMultiTenant: at a multi-tenant provider, a user is admitted
// only from an allowed tenant whose issuer signed the token, and is the
// user of that tenant's issuer.
func TestUpstreamMultiTenant(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims func(p *fakeProvider, c map[string]any)
		sub    string // tenant issuer of the subject; "" means refused
	}{
		{"allowed tenant", func(*fakeProvider, map[string]any) {}, tenantA},
		{"allowed tenant, other case in the token", func(p *fakeProvider, c map[string]any) {
			c["tid"], c["iss"] = strings.ToUpper(tenantB), tenantIssuer(p, strings.ToUpper(tenantB))
		}, strings.ToUpper(tenantB)},
		{"tenant not allowed", func(p *fakeProvider, c map[string]any) {
			c["tid"], c["iss"] = tenantC, tenantIssuer(p, tenantC)
		}, ""},
		{"iss of another tenant than tid", func(p *fakeProvider, c map[string]any) {
			c["iss"] = tenantIssuer(p, tenantC)
		}, ""},
		{"iss of another allowed tenant than tid", func(p *fakeProvider, c map[string]any) {
			c["iss"] = tenantIssuer(p, tenantB)
		}, ""},
		{"iss is the template", func(p *fakeProvider, c map[string]any) {
			c["iss"] = tenantIssuer(p, TenantPlaceholder)
		}, ""},
		{"tid missing", func(p *fakeProvider, c map[string]any) { delete(c, "tid") }, ""},
		{"tid not a string", func(p *fakeProvider, c map[string]any) { c["tid"] = []string{tenantA} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := multiTenantHarness(t, tc.claims)
			b := newBrowser(t, h)
			q, verifier := authParams(publicID, publicCB)
			loc := location(t, b.login(q))
			if tc.sub == "" {
				if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
					t.Fatalf("got %s, want access_denied", loc)
				}
				if !strings.Contains(h.logs.String(), "upstream ID token refused") {
					t.Errorf("the refusal is not logged: %s", h.logs)
				}
				return
			}
			res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
			if res.tok == nil {
				t.Fatalf("login: %s; token: %d %s", loc, res.status, res.body)
			}
			_, claims := h.verifyJWT(res.tok.AccessToken)
			if want := Subject(tenantIssuer(p, tc.sub), "alice-123"); claims["sub"] != want {
				t.Errorf("sub = %v, want the user of the tenant's issuer %s", claims["sub"], want)
			}
		})
	}
}

// TestUpstreamMultiTenantSubjects: the same "sub" in two tenants is two
// users.
func TestUpstreamMultiTenantSubjects(t *testing.T) {
	subs := map[string]bool{}
	for _, tid := range []string{tenantA, tenantB} {
		h, _ := multiTenantHarness(t, func(p *fakeProvider, c map[string]any) {
			c["tid"], c["iss"] = tid, tenantIssuer(p, tid)
		})
		b := newBrowser(t, h)
		q, verifier := authParams(publicID, publicCB)
		loc := location(t, b.login(q))
		res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
		if res.tok == nil {
			t.Fatalf("tenant %s: %s; token: %d %s", tid, loc, res.status, res.body)
		}
		_, claims := h.verifyJWT(res.tok.AccessToken)
		subs[claims["sub"].(string)] = true
	}
	if len(subs) != 2 {
		t.Errorf("users of two tenants with the same sub share a subject: %v", subs)
	}
}

// TestMultiTenantConfig: a multi-tenant login needs a template and an
// allow-list of tenant IDs; the entra preset makes one for organizations
// and common.
func TestMultiTenantConfig(t *testing.T) {
	const tmpl = "https://login.microsoftonline.com/{tenantid}/v2.0"
	base := Config{Issuer: "https://login.microsoftonline.com/organizations/v2.0", ClientID: "c"}
	for _, tc := range []struct {
		name string
		mt   *MultiTenant
		oa   *OAuth2Endpoints
	}{
		{"no allow-list", &MultiTenant{IssuerTemplate: tmpl}, nil},
		{"empty allow-list", &MultiTenant{IssuerTemplate: tmpl, Tenants: []string{}}, nil},
		{"tenant not a GUID", &MultiTenant{IssuerTemplate: tmpl, Tenants: []string{"contoso.com"}}, nil},
		{"tenant with a newline", &MultiTenant{IssuerTemplate: tmpl, Tenants: []string{tenantA + "\n"}}, nil},
		{"template without placeholder", &MultiTenant{IssuerTemplate: "https://login.microsoftonline.com/v2.0", Tenants: []string{tenantA}}, nil},
		{"template twice", &MultiTenant{IssuerTemplate: tmpl + "/{tenantid}", Tenants: []string{tenantA}}, nil},
		{"template on http", &MultiTenant{IssuerTemplate: "http://login.example/{tenantid}", Tenants: []string{tenantA}}, nil},
		{"with OAuth2", &MultiTenant{IssuerTemplate: tmpl, Tenants: []string{tenantA}}, &OAuth2Endpoints{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.MultiTenant, c.OAuth2 = tc.mt, tc.oa
			if p, err := New(c); !errors.Is(err, authserver.ErrConfig) {
				if p != nil {
					_ = p.Close()
				}
				t.Fatalf("New = %v, want a configuration error", err)
			}
		})
	}
	for _, tenant := range []string{"organizations", "Common"} {
		p, err := Preset(PresetEntra, tenant)
		if err != nil || p.MultiTenant == nil || p.MultiTenant.IssuerTemplate != tmpl ||
			p.Issuer != "https://login.microsoftonline.com/"+strings.ToLower(tenant)+"/v2.0" {
			t.Fatalf("Preset(entra, %s) = %+v, %v", tenant, p, err)
		}
		p.ClientID = "c"
		if _, err := New(*p); !errors.Is(err, authserver.ErrConfig) {
			t.Errorf("entra %s without tenants: %v, want a configuration error", tenant, err)
		}
		p.MultiTenant.Tenants = []string{tenantA}
		u, err := New(*p)
		if err != nil {
			t.Fatalf("entra %s with a tenant: %v", tenant, err)
		}
		_ = u.Close()
	}
	if _, err := Preset(PresetEntra, "consumers"); !errors.Is(err, authserver.ErrConfig) {
		t.Errorf("entra consumers: %v", err)
	}
	// A private_key_jwt assertion cannot name the template: it names the
	// token endpoint.
	m := &oauthmeta.AuthServerMetadata{Issuer: tmpl, TokenEndpoint: "https://login.microsoftonline.com/organizations/oauth2/v2.0/token"}
	if got := (&oidcProvider{}).assertionAudience(m); got != m.TokenEndpoint {
		t.Errorf("multi-tenant assertion aud %q, want the token endpoint", got)
	}
}
