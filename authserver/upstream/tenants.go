package upstream

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/safehttp"
)

// TenantPlaceholder stands for the tenant ID in
// [MultiTenant.IssuerTemplate], as in Microsoft Entra ID's multi-tenant
// discovery metadata.
const TenantPlaceholder = "{tenantid}"

// MultiTenant is a login at a multi-tenant OpenID provider (Microsoft
// Entra ID's "organizations" or "common" endpoint): its metadata names
// no single issuer but a template, and each ID token is issued by the
// user's tenant. A token is accepted only when its "tid" claim is one of
// Tenants and its "iss" is IssuerTemplate with that "tid" in place of
// [TenantPlaceholder]; the user's subject is then made from that tenant's
// issuer, so the same "sub" in two tenants is two users.
type MultiTenant struct {
	// IssuerTemplate is the "issuer" of the discovery metadata, holding
	// [TenantPlaceholder] once: for Entra ID
	// "https://login.microsoftonline.com/{tenantid}/v2.0". Required.
	IssuerTemplate string
	// Tenants are the tenant (directory) IDs whose users may log in:
	// GUIDs, compared without regard to ASCII case. Required: there is
	// no "any tenant".
	Tenants []string
}

// tenantID is a tenant (directory) ID: a GUID.
var tenantID = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// tenants is a checked MultiTenant.
type tenants struct {
	template string
	allowed  []string // lower-cased
}

// newTenants checks m against the issuer's URL rules of f; nil m is a
// single-tenant provider.
func newTenants(m *MultiTenant, f *safehttp.Fetcher) (*tenants, error) {
	if m == nil {
		return nil, nil
	}
	if strings.Count(m.IssuerTemplate, TenantPlaceholder) != 1 {
		return nil, configErr("Upstream.MultiTenant.IssuerTemplate", "must hold "+TenantPlaceholder+" once")
	}
	example := strings.Replace(m.IssuerTemplate, TenantPlaceholder, "00000000-0000-0000-0000-000000000000", 1)
	if u, err := url.Parse(example); err != nil || u.RawQuery != "" || u.Fragment != "" || f.CheckURL(example) != nil {
		return nil, configErr("Upstream.MultiTenant.IssuerTemplate", "must be an https URL without query or fragment")
	}
	if len(m.Tenants) == 0 {
		return nil, configErr("Upstream.MultiTenant.Tenants", "name the tenant IDs whose users may log in (there is no \"any tenant\")")
	}
	t := &tenants{template: m.IssuerTemplate}
	for i, id := range m.Tenants {
		if !tenantID.MatchString(id) {
			return nil, configErr(fmt.Sprintf("Upstream.MultiTenant.Tenants[%d]", i), fmt.Sprintf("%.60q is not a tenant ID (a GUID)", id))
		}
		t.allowed = append(t.allowed, ascii.ToLower(id))
	}
	return t, nil
}

// issuer checks the "tid" and "iss" of an ID token and returns the
// tenant's issuer, which names the user's provider in [Subject].
func (t *tenants) issuer(tid any, iss string) (string, error) {
	id, _ := tid.(string)
	switch {
	case id == "":
		return "", fmt.Errorf("%w: tid is missing", errIDToken)
	case !tenantID.MatchString(id) || !slices.Contains(t.allowed, ascii.ToLower(id)):
		return "", fmt.Errorf("%w: tid %.40q is not an allowed tenant", errIDToken, id)
	case iss != strings.Replace(t.template, TenantPlaceholder, id, 1):
		return "", fmt.Errorf("%w: iss is not the issuer of the tenant tid", errIDToken)
	}
	return iss, nil
}
