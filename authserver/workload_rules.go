package authserver

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// WorkloadRule says which workloads of a trusted workload issuer may
// receive tokens, for which resources and with which scopes (the
// claim-based authorization of the MCP workload identity federation
// extension). A workload matches a rule when every condition the rule sets
// holds for its verified JWT; a rule must set Subject or at least one
// entry of Claims. Patterns use the syntax of path.Match: "*" matches any
// run of characters other than "/", "?" one such character, and "[...]"
// a class; matching takes time linear in the input for practical patterns
// and never uses regular expressions.
type WorkloadRule struct {
	// Subject is a pattern the "sub" claim must match ("" sets no
	// condition), such as "system:serviceaccount:payments:*" or
	// "spiffe://example.org/ns/payments/sa/*".
	Subject string
	// Audience, when set, must be one of the JWT's "aud" values exactly.
	Audience string
	// Claims maps a claim to the pattern its value must match. The name
	// is a path into nested objects separated by "/", so
	// "kubernetes.io/namespace" is the "namespace" member of the
	// "kubernetes.io" object; GitHub Actions tokens are matched by
	// "repository" and "ref". The value must be a JSON string; a missing
	// claim or any other type does not match.
	Claims map[string]string
	// Resources are the resources (RFC 8707) matching workloads may get
	// tokens for, each exactly or as a pattern ("http://127.0.0.1:*/mcp";
	// "*" never crosses a "/"). At least one is required; the resources
	// of a token must also be allowed by Config.Resources. Prefer exact
	// values: a pattern's host part can match more than intended.
	Resources []string
	// Scopes are the scopes matching workloads may get. At least one is
	// required; each must be in Config.Scopes (and in the issuer's
	// Scopes when it has them).
	Scopes []string
}

// workloadRules are one issuer's compiled rules.
type workloadRules []WorkloadRule

// compileWorkloadRules validates the rules of ti.
func compileWorkloadRules(ti *TrustedIssuer, field string, supported []string) (workloadRules, error) {
	if len(ti.Rules) == 0 {
		return nil, configErr(field, "a workload issuer needs at least one rule: no rule, no token")
	}
	out := make(workloadRules, 0, len(ti.Rules))
	for i, r := range ti.Rules {
		f := fmt.Sprintf("%s.Rules[%d]", field, i)
		if r.Subject == "" && len(r.Claims) == 0 {
			return nil, configErr(f, "needs Subject or Claims")
		}
		patterns := []string{r.Subject}
		for name, p := range r.Claims {
			if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
				return nil, configErr(f, "claim names must be non-empty paths")
			}
			patterns = append(patterns, p)
		}
		for _, p := range patterns {
			if _, err := path.Match(p, ""); err != nil {
				return nil, configErr(f, "malformed pattern")
			}
		}
		switch {
		case len(r.Resources) == 0:
			return nil, configErr(f, "needs at least one resource")
		case len(r.Scopes) == 0:
			return nil, configErr(f, "needs at least one scope")
		case !subset(r.Scopes, supported) || (ti.Scopes != nil && !subset(r.Scopes, ti.Scopes)):
			return nil, configErr(f, "every scope must be in Scopes and in the issuer's Scopes")
		}
		for _, res := range r.Resources {
			if _, err := path.Match(res, ""); err != nil || res == "" {
				return nil, configErr(f, "malformed resource pattern")
			}
		}
		out = append(out, WorkloadRule{Subject: r.Subject, Audience: r.Audience, Claims: r.Claims,
			Resources: slices.Clone(r.Resources), Scopes: slices.Clone(r.Scopes)})
	}
	return out, nil
}

// workload is what the rules look at in a verified workload JWT.
type workload struct {
	subject  string
	audience []string
	claims   map[string]any // the payload, decoded once
}

// newWorkload decodes a verified payload for rule matching.
func newWorkload(subject string, audience []string, payload []byte) workload {
	w := workload{subject: subject, audience: audience}
	if jsonx.DecodeObject(payload, &w.claims) != nil {
		w.claims = nil // no claim can match
	}
	return w
}

// claim returns the string at a "/"-separated path of nested objects.
func (w *workload) claim(name string) (string, bool) {
	var v any = w.claims
	for part := range strings.SplitSeq(name, "/") {
		obj, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = obj[part]; !ok {
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}

// matches reports whether the workload meets every condition of r.
func (r *WorkloadRule) matches(w *workload) bool {
	if r.Subject != "" && !glob(r.Subject, w.subject) {
		return false
	}
	if r.Audience != "" && !slices.Contains(w.audience, r.Audience) {
		return false
	}
	for name, p := range r.Claims {
		v, ok := w.claim(name)
		if !ok || !glob(p, v) {
			return false
		}
	}
	return true
}

// coversAll reports whether every resource matches one of r.Resources.
func (r *WorkloadRule) coversAll(resources []string) bool {
	for _, res := range resources {
		if !slices.ContainsFunc(r.Resources, func(p string) bool { return glob(p, res) }) {
			return false
		}
	}
	return true
}

// glob matches a validated pattern; input longer than 1 KiB never
// matches, so a hostile claim costs bounded work.
func glob(pattern, s string) bool {
	if len(s) > 1024 {
		return false
	}
	ok, err := path.Match(pattern, s)
	return ok && err == nil
}

// authorize decides a workload's request: the resources it asks for
// (none: the single resource of the matching rules, when they name exactly
// one) and the scopes: each requested one must be allowed by one rule
// covering every resource; with none requested, the scopes of the first
// such rule that usable keeps. The answer names the first refusal by the
// RFC's code: no rule for this workload is invalid_grant, no rule of its
// for every resource is invalid_target, no such rule allowing the scopes
// is invalid_scope.
func (rs workloadRules) authorize(w *workload, resources, requested []string, usable func(string) bool) ([]string, []string, *oauthmeta.Error) {
	var mine workloadRules
	for i := range rs {
		if rs[i].matches(w) {
			mine = append(mine, rs[i])
		}
	}
	if len(mine) == 0 {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "the workload is not authorized by any rule")
	}
	if len(resources) == 0 {
		var all []string
		for _, r := range mine {
			all = appendNew(all, r.Resources...)
		}
		if len(all) != 1 || strings.ContainsAny(all[0], `*?[\`) {
			return nil, nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource is required")
		}
		resources = all
	}
	var covering workloadRules
	for _, r := range mine {
		if r.coversAll(resources) {
			covering = append(covering, r)
		}
	}
	if len(covering) == 0 {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidTarget, "the workload may not get tokens for this resource")
	}
	for _, r := range covering {
		if len(requested) > 0 && subset(requested, r.Scopes) {
			return resources, requested, nil
		}
		if len(requested) == 0 {
			if out := slices.DeleteFunc(slices.Clone(r.Scopes), func(sc string) bool { return !usable(sc) }); len(out) > 0 {
				return resources, out, nil
			}
		}
	}
	return nil, nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not allowed for this workload and resource")
}
