package selfcheck

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// prmDoc is a protected resource metadata document and where it came from.
type prmDoc struct {
	url  string
	meta *oauthmeta.ProtectedResourceMetadata
}

// offlineAccess is the scope MCP servers should not advertise (RS-23).
const offlineAccess = "offline_access"

// checkPRM fetches the RFC 9728 document at the path-inserted URL and checks
// it (RS-01, RS-02, RS-03, RS-23), then the root document (RS-02).
func (r *runner) checkPRM(ctx context.Context) {
	const (
		nameServed   = "metadata at the path-inserted URL"
		nameResource = "metadata resource identical to URL"
		nameAS       = "metadata lists authorization servers"
		nameScopes   = "metadata scopes_supported without offline_access"
	)
	url := r.cfg.prmURL
	doc, why := r.getPRM(ctx, url)
	if doc == nil {
		r.add("RS-02", nameServed, StatusFail, "GET %s: %s", url, why)
		r.add("RS-03", nameResource, StatusSkip, "no metadata document")
		r.add("RS-01", nameAS, StatusSkip, "no metadata document")
	} else {
		r.prm = doc
		r.add("RS-02", nameServed, StatusPass, "200 application/json at %s", url)
		r.checkResource("RS-03", nameResource, doc)
		r.checkListsAS(nameAS, doc)
		r.addEither(!slices.Contains(doc.meta.ScopesSupported, offlineAccess), "RS-23", nameScopes, "",
			StatusWarn, "scopes_supported lists offline_access; clients request it only when the authorization server lists it")
	}
	r.checkRootPRM(ctx)
}

// getPRM fetches and parses a metadata document on the server's own origin.
// On failure it returns nil and says why.
func (r *runner) getPRM(ctx context.Context, url string) (*prmDoc, string) {
	ex := r.send(ctx, probe{method: http.MethodGet, url: url, header: http.Header{"Accept": {"application/json"}}})
	if ex.err != nil {
		return nil, "request failed: " + ex.err.Error()
	}
	if ex.status != http.StatusOK {
		return nil, fmt.Sprintf("answered %d", ex.status)
	}
	if ex.truncated {
		return nil, fmt.Sprintf("document larger than %d bytes", MaxBodyBytes)
	}
	if mt, _, _ := mime.ParseMediaType(ex.header.Get("Content-Type")); mt != "application/json" {
		return nil, "Content-Type " + r.quote(ex.header.Get("Content-Type")) + ", RFC 9728 §3.2 requires application/json"
	}
	meta, err := oauthmeta.ParseProtectedResourceMetadata(ex.body)
	if err != nil {
		return nil, "not a metadata document: " + err.Error()
	}
	return &prmDoc{url: url, meta: meta}, ""
}

// checkResource: "resource" is identical to URL (RFC 9728 §3.3).
func (r *runner) checkResource(id, name string, doc *prmDoc) {
	got, want := doc.meta.Resource, r.cfg.URL
	switch {
	case got == want:
		r.add(id, name, StatusPass, "%s names %s", doc.url, want)
	case oauthmeta.SameResource(got, want):
		r.add(id, name, StatusFail, "%s names %s, which differs from %s in form; clients compare byte for byte", doc.url, r.quote(got), want)
	default:
		r.add(id, name, StatusFail, "%s names %s, not %s; clients abort", doc.url, r.quote(got), want)
	}
}

// checkListsAS: at least one authorization server, each a valid issuer
// (RS-01).
func (r *runner) checkListsAS(name string, doc *prmDoc) {
	as := doc.meta.AuthorizationServers
	if len(as) == 0 {
		r.add("RS-01", name, StatusFail, "authorization_servers is empty or absent; MCP requires at least one")
		return
	}
	for _, iss := range as {
		if err := r.cfg.policy.CheckIssuer(iss); err != nil {
			r.add("RS-01", name, StatusFail, "authorization server %s is not a usable issuer: %v", r.quote(iss), err)
			return
		}
	}
	r.add("RS-01", name, StatusPass, "%s", strings.Join(as, ", "))
}

// checkRootPRM: a document at the origin, if served, names the origin, not
// the endpoint (RS-02; RFC 9728 §3.3).
func (r *runner) checkRootPRM(ctx context.Context) {
	const name = "root metadata does not claim the endpoint"
	if r.cfg.rootPRMURL == r.cfg.prmURL {
		r.add("RS-02", name, StatusSkip, "URL has no path; the root document is the one above")
		return
	}
	ex := r.send(ctx, probe{method: http.MethodGet, url: r.cfg.rootPRMURL, header: http.Header{"Accept": {"application/json"}}})
	switch {
	case ex.err != nil:
		r.add("RS-02", name, StatusSkip, "GET %s: request failed: %v", r.cfg.rootPRMURL, ex.err)
		return
	case ex.status != http.StatusOK:
		r.add("RS-02", name, StatusPass, "not served (%d)", ex.status)
		return
	}
	meta, err := oauthmeta.ParseProtectedResourceMetadata(ex.body)
	switch {
	case err != nil:
		r.add("RS-02", name, StatusWarn, "%s answered 200 with no valid metadata: %v", r.cfg.rootPRMURL, err)
	case meta.Resource == r.cfg.URL:
		r.add("RS-02", name, StatusWarn, "%s names the endpoint %s; a root document must name the origin %s", r.cfg.rootPRMURL, r.cfg.URL, r.cfg.origin)
	case meta.Resource != r.cfg.origin:
		r.add("RS-02", name, StatusWarn, "%s names %s, not the origin %s", r.cfg.rootPRMURL, r.quote(meta.Resource), r.cfg.origin)
	default:
		r.add("RS-02", name, StatusPass, "served for the origin %s", r.cfg.origin)
	}
}
