package selfcheck

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// invalidToken is a well-formed bearer token no server issued.
const invalidToken = "bWNwYXV0aC1jaGVjay1pbnZhbGlkLXRva2Vu"

// challenge records one 401 or 403 seen on an authentication request, for
// the RS-25 summary.
type challenge struct {
	request     string
	status      int
	hasMetadata bool
}

// observe records ex if it is a 401 or 403.
func (r *runner) observe(request string, ex exchange) {
	if ex.err != nil || (ex.status != http.StatusUnauthorized && ex.status != http.StatusForbidden) {
		return
	}
	ch, found, _ := bearer(ex)
	r.challenged = append(r.challenged, challenge{
		request: request, status: ex.status,
		hasMetadata: found && ch.Value(oauthmeta.ParamResourceMetadata) != "",
	})
}

// checkNoToken: a request without credentials gets 401 with a Bearer
// challenge naming the metadata, no error, and the scopes needed (RS-04,
// RS-06, RS-05, RS-23).
func (r *runner) checkNoToken(ctx context.Context) {
	const (
		name401   = "401 without a token, with resource_metadata"
		nameErr   = "no error= without credentials"
		nameScope = "401 names the needed scopes"
	)
	ex := r.send(ctx, probe{rpc: "tools/list"})
	r.observe("no token", ex)
	if ex.err == nil {
		r.noToken = ex.header
	}
	ch, found, malformed := bearer(ex)
	if ex.err != nil || ex.status != http.StatusUnauthorized || !found {
		why := r.describe(ex)
		switch {
		case ex.is2xx():
			why += "; the endpoint is not protected"
		case malformed:
			why += " (malformed)"
		case ex.status == http.StatusUnauthorized:
			why += "; no Bearer or DPoP challenge"
		}
		r.add("RS-04", name401, StatusFail, "POST tools/list without a token: %s", why)
		r.add("RS-06", nameErr, StatusSkip, "no Bearer 401 to inspect")
		r.add("RS-05", nameScope, StatusSkip, "no Bearer 401 to inspect")
		return
	}
	r.checkPointer(ctx, name401, ch.Value(oauthmeta.ParamResourceMetadata))
	e, hasErr := ch.Get(oauthmeta.ParamError)
	r.addEither(!hasErr, "RS-06", nameErr, "", StatusWarn, "error="+r.quote(e)+" on a request that carried no token (RFC 6750 §3.1)")
	scope, ok := ch.Get(oauthmeta.ParamScope)
	scopes, err := oauthmeta.ParseScope(scope)
	switch {
	case !ok:
		r.add("RS-05", nameScope, StatusWarn, "no scope=; clients fall back to scopes_supported or ask for none")
	case err != nil || len(scopes) == 0:
		r.add("RS-05", nameScope, StatusFail, "scope=%s is not an RFC 6749 §3.3 scope list", r.quote(scope))
	default:
		r.add("RS-05", nameScope, StatusPass, "scope=%s", r.quote(scope))
	}
	r.addEither(!slices.Contains(scopes, offlineAccess), "RS-23", "challenge scope without offline_access", "",
		StatusWarn, "the 401 asks for offline_access")
}

// checkPointer grades the resource_metadata of the first 401 (RS-04) and,
// when it names another URL than the path-inserted one, fetches that
// document through the guarded fetcher and checks its resource (RS-03).
func (r *runner) checkPointer(ctx context.Context, name, rm string) {
	switch {
	case rm == "" && r.prm != nil:
		r.add("RS-04", name, StatusWarn, "no resource_metadata; clients of 2025-06-18 read only the header, later ones fall back to the well-known URL")
		return
	case rm == "":
		r.add("RS-04", name, StatusFail, "no resource_metadata and no metadata at the well-known URL: clients cannot find the authorization server")
		return
	case rm == r.cfg.prmURL && r.prm == nil:
		r.add("RS-04", name, StatusFail, "resource_metadata names %s, which gave no usable document (see RS-02)", rm)
		return
	case rm == r.cfg.prmURL:
		r.add("RS-04", name, StatusPass, "resource_metadata=%s", rm)
		return
	}
	doc, err := r.fetchPRM(ctx, rm)
	if err != nil {
		r.add("RS-04", name, StatusFail, "resource_metadata=%s: %v", r.quote(rm), err)
		return
	}
	r.pointerPRM = doc
	r.add("RS-04", name, StatusPass, "resource_metadata=%s (not the path-inserted URL %s)", r.quote(rm), r.cfg.prmURL)
	r.checkResource("RS-03", "metadata via resource_metadata identical to URL", doc)
}

// fetchPRM fetches a metadata document at a URL the server named, through
// the guarded fetcher.
func (r *runner) fetchPRM(ctx context.Context, rawURL string) (*prmDoc, error) {
	if err := r.cfg.policy.CheckURL(rawURL); err != nil {
		return nil, fmt.Errorf("not an acceptable URL: %w", err)
	}
	resp, err := r.cfg.fetcher.Get(ctx, rawURL, "application/json")
	if err != nil {
		return nil, fmt.Errorf("fetch refused or failed: %w", err)
	}
	meta, err := oauthmeta.ParseProtectedResourceMetadata(resp.Body)
	if err != nil {
		return nil, err
	}
	return &prmDoc{url: rawURL, meta: meta}, nil
}

// checkInvalidToken: a token the server never issued gets 401
// invalid_token (RS-07).
func (r *runner) checkInvalidToken(ctx context.Context) {
	const name = "invalid token gets 401 invalid_token"
	ex := r.send(ctx, probe{rpc: "tools/list", auth: "Bearer " + invalidToken})
	r.observe("invalid token", ex)
	ch, found, _ := bearer(ex)
	switch {
	case ex.is2xx():
		r.add("RS-07", name, StatusFail, "%s: an invalid token was accepted", r.describe(ex))
	case ex.status == http.StatusUnauthorized && found && ch.Value(oauthmeta.ParamError) == string(oauthmeta.CodeInvalidToken):
		r.add("RS-07", name, StatusPass, "")
	case ex.status == http.StatusUnauthorized:
		r.add("RS-07", name, StatusFail, "%s; error=\"invalid_token\" expected", r.describe(ex))
	default:
		r.add("RS-07", name, StatusFail, "%s; 401 expected", r.describe(ex))
	}
}

// checkMalformedAuthorization: "Bearer a b" is a malformed request, 400
// invalid_request (RS-16); 401 is tolerated with a warning.
func (r *runner) checkMalformedAuthorization(ctx context.Context) {
	const name = "malformed Authorization gets 400 invalid_request"
	ex := r.send(ctx, probe{rpc: "tools/list", auth: "Bearer a b"})
	r.observe("malformed Authorization", ex)
	ch, found, _ := bearer(ex)
	switch {
	case ex.is2xx():
		r.add("RS-16", name, StatusFail, "%s: a malformed Authorization header was accepted", r.describe(ex))
	case ex.status == http.StatusBadRequest && found && ch.Value(oauthmeta.ParamError) == string(oauthmeta.CodeInvalidRequest):
		r.add("RS-16", name, StatusPass, "")
	case ex.status == http.StatusBadRequest:
		r.add("RS-16", name, StatusWarn, "%s; a Bearer challenge with error=\"invalid_request\" expected", r.describe(ex))
	case ex.status == http.StatusUnauthorized:
		r.add("RS-16", name, StatusWarn, "%s; 400 invalid_request expected for a malformed header", r.describe(ex))
	default:
		r.add("RS-16", name, StatusFail, "%s; 400 expected", r.describe(ex))
	}
}

// checkQueryToken: a token in the query string, and nowhere else, is never
// accepted (RS-17). The valid token is used when given.
func (r *runner) checkQueryToken(ctx context.Context) {
	const name = "token in the query string refused"
	tok, note := r.cfg.Token, ""
	if tok == "" {
		tok, note = invalidToken, " (only an invalid token was tried; give a valid one for a meaningful check)"
	}
	sep := "?"
	if strings.Contains(r.cfg.URL, "?") {
		sep = "&"
	}
	ex := r.send(ctx, probe{rpc: "tools/list", url: r.cfg.URL + sep + "access_token=" + url.QueryEscape(tok)})
	r.observe("token in query", ex)
	switch {
	case ex.err != nil:
		r.add("RS-17", name, StatusSkip, "%s", r.describe(ex))
	case ex.is2xx():
		r.add("RS-17", name, StatusFail, "POST ?access_token=[token] answered %d: a token in the query string was accepted", ex.status)
	default:
		r.add("RS-17", name, StatusPass, "answered %d%s", ex.status, note)
	}
}

// checkChallengeMetadata: every 401 and 403 seen carried resource_metadata
// (RS-25).
func (r *runner) checkChallengeMetadata(context.Context) {
	const name = "resource_metadata in every 401 and 403"
	if len(r.challenged) == 0 {
		r.add("RS-25", name, StatusSkip, "no 401 or 403 seen")
		return
	}
	var missing []string
	for _, c := range r.challenged {
		if !c.hasMetadata {
			missing = append(missing, fmt.Sprintf("%d for %s", c.status, c.request))
		}
	}
	if len(missing) > 0 {
		r.add("RS-25", name, StatusWarn, "missing on: %s", strings.Join(missing, "; "))
		return
	}
	r.add("RS-25", name, StatusPass, "%d challenges checked", len(r.challenged))
}
