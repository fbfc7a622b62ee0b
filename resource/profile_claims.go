package resource

import (
	"reflect"
	"slices"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// tokenProfile is a [Profile] compiled for verification.
type tokenProfile struct {
	typAT, typJWT, typNone bool
	audiences              map[string]struct{} // exact, besides the resource's
	scopes                 []scopeClaim
	client                 jwtverify.ClaimPath
	clientRequired         bool
	clientIDs              map[string]struct{} // nil: any client
	required               []requiredClaim
	tenants                map[string]struct{} // nil: "tid" not checked
	readTenant             bool
	acceptMissingAudience  bool
}

type scopeClaim struct {
	path jwtverify.ClaimPath
	// stringOnly: the RFC 9068 "scope" of a profile that names no scope
	// claims, a string as RFC 9068 §2.2.3 has it.
	stringOnly bool
}

type requiredClaim struct {
	path   jwtverify.ClaimPath
	values []string
}

// compileProfile compiles p, or returns nil for the zero Profile (RFC
// 9068, checked by the Verifier's own path).
func compileProfile(p Profile) (*tokenProfile, error) {
	if isZeroProfile(&p) {
		return nil, nil
	}
	e, pr, err := p.effective()
	if err != nil {
		return nil, err
	}
	tp := &tokenProfile{
		clientRequired:        p.Preset != "" || p.ClientClaim != "" || len(e.ClientIDs) > 0,
		readTenant:            pr.tenant || len(e.TenantIDs) > 0,
		acceptMissingAudience: e.InsecureAcceptMissingAudience,
		audiences:             set(e.Audiences),
		clientIDs:             set(e.ClientIDs),
		tenants:               set(e.TenantIDs),
	}
	for _, t := range e.Types {
		switch t {
		case TypeAccessToken:
			tp.typAT = true
		case TypeJWT:
			tp.typJWT = true
		case TypeNone:
			tp.typNone = true
		}
	}
	for _, c := range e.ScopeClaims {
		cp, _ := jwtverify.ParseClaimPath(c) // validated by effective
		tp.scopes = append(tp.scopes, scopeClaim{path: cp, stringOnly: p.Preset == "" && p.ScopeClaims == nil})
	}
	tp.client, _ = jwtverify.ParseClaimPath(e.ClientClaim)
	for _, r := range e.RequiredClaims {
		cp, _ := jwtverify.ParseClaimPath(r.Claim)
		tp.required = append(tp.required, requiredClaim{path: cp, values: r.Values})
	}
	return tp, nil
}

// isZeroProfile reports whether p is the zero Profile (an empty, non-nil
// list is not: it is refused by name).
func isZeroProfile(p *Profile) bool { return reflect.ValueOf(*p).IsZero() }

func set(list []string) map[string]struct{} {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]struct{}, len(list))
	for _, s := range list {
		m[s] = struct{}{}
	}
	return m
}

// typeAccepted applies the profile's "typ" rule to a header: a missing
// "typ" only with "none", a present one (which must be a string) only if it
// is at+jwt or JWT and that type is accepted (RFC 7515 §4.1.9 comparison).
func (p *tokenProfile) typeAccepted(h *jose.Header) bool {
	raw, present := h.ExtraHeaders[jose.HeaderType]
	if !present {
		return p.typNone
	}
	typ, ok := raw.(string)
	return ok && (p.typAT && jwtverify.TypeIs(typ, "at+jwt") || p.typJWT && jwtverify.TypeIs(typ, "JWT"))
}

// audienceAccepted reports whether aud names this resource for the
// profile's issuer, after the resource's own identifiers did not match: one
// of the profile's audiences, or no audience at all with the opt-in (the
// client binding is checked with the other claims).
func (p *tokenProfile) audienceAccepted(aud []string) bool {
	for _, a := range aud {
		if _, ok := p.audiences[a]; ok {
			return true
		}
	}
	return len(aud) == 0 && p.acceptMissingAudience
}

// profileClaims is the payload of a token of an issuer with a profile:
// the registered claims, "cnf", and every other member kept raw for the
// profile's claim paths.
type profileClaims struct {
	jwtverify.Claims `json:",inline"`
	Confirmation     *oauthmeta.Confirmation `json:"cnf"`
	Members          jwtverify.Members       `json:",unknown"`
}

// profiled is what a profile reads from a token.
type profiled struct {
	clientID, tenant string
	scopes           []string
}

// read applies the profile's claim rules to m, in the order required
// claims, tenant (tenant is the one an issuer template was filled with,
// or ""), client, scopes. The scopes go into buf when they fit (see
// parseScope).
func (p *tokenProfile) read(m jwtverify.Members, tenant string, buf []string) (r profiled, err error) {
	for _, rc := range p.required {
		v, ok, err := m.Lookup(rc.path)
		if err != nil {
			return r, errMalformedToken
		}
		if !ok {
			return r, errRequiredClaim
		}
		s, err := jwtverify.ClaimString(v)
		if err != nil || !slices.Contains(rc.values, s) {
			return r, errRequiredClaim
		}
	}
	if p.readTenant {
		if r.tenant, err = optionalString(m, tidClaim); err != nil {
			return r, err
		}
		if tenant != "" && r.tenant != tenant {
			return r, errTenant // "iss" is the template filled with another tenant
		}
		if _, ok := p.tenants[r.tenant]; p.tenants != nil && !ok {
			return r, errTenant
		}
	}
	if r.clientID, err = optionalString(m, p.client); err != nil {
		return r, err
	}
	if r.clientID == "" && p.clientRequired {
		return r, errNoClient
	}
	if _, ok := p.clientIDs[r.clientID]; p.clientIDs != nil && !ok {
		return r, errClient
	}
	r.scopes, err = p.readScopes(m, buf)
	return r, err
}

var tidClaim, _ = jwtverify.ParseClaimPath("tid")

// optionalString reads a string claim: "" when absent, errMalformedToken
// when of another type.
func optionalString(m jwtverify.Members, cp jwtverify.ClaimPath) (string, error) {
	v, ok, err := m.Lookup(cp)
	if err != nil {
		return "", errMalformedToken
	}
	if !ok {
		return "", nil
	}
	s, err := jwtverify.ClaimString(v)
	if err != nil {
		return "", errMalformedToken
	}
	return s, nil
}

// readScopes collects the scopes of the profile's scope claims in order,
// duplicates dropped: a string claim is split as "scope" is (RFC 6749
// §3.3), an array claim's members are scope-tokens each. Any other type,
// or a value that is not a scope-token, is malformed. The result has no
// spare capacity and lives in buf when it fits.
func (p *tokenProfile) readScopes(m jwtverify.Members, buf []string) ([]string, error) {
	out := buf[:0]
	for _, sc := range p.scopes {
		v, ok, err := m.Lookup(sc.path)
		if err != nil {
			return nil, errMalformedToken
		}
		if !ok {
			continue
		}
		var vals []string
		switch {
		case v.Kind() == '"':
			s, err := jwtverify.ClaimString(v)
			if err != nil {
				return nil, errMalformedToken
			}
			if vals, err = oauthmeta.AppendScope(nil, s); err != nil {
				return nil, errMalformedToken
			}
		case v.Kind() == '[' && !sc.stringOnly:
			if vals, err = jwtverify.ClaimStrings(v); err != nil {
				return nil, errMalformedToken
			}
			for _, s := range vals {
				if !oauthmeta.ValidScopeToken(s) {
					return nil, errMalformedToken
				}
			}
		default:
			return nil, errMalformedToken
		}
		for _, s := range vals {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out[:len(out):len(out)], nil
}
