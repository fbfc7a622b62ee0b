package selfcheck

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// checkAuthServers checks the RFC 8414 metadata of each authorization
// server listed in the endpoint's metadata (at most [MaxAuthServers]).
func (r *runner) checkAuthServers(ctx context.Context) {
	doc := r.prm
	if doc == nil || len(doc.meta.AuthorizationServers) == 0 {
		doc = r.pointerPRM
	}
	if doc == nil || len(doc.meta.AuthorizationServers) == 0 {
		r.add("CL-06", "authorization server metadata found", StatusSkip, "no authorization server known")
		return
	}
	issuers := doc.meta.AuthorizationServers
	if len(issuers) > MaxAuthServers {
		issuers = issuers[:MaxAuthServers]
	}
	for _, iss := range issuers {
		if ctx.Err() != nil {
			return
		}
		r.checkAuthServer(ctx, iss)
	}
}

// authServer is the metadata of one listed authorization server.
type authServer struct {
	issuer string
	meta   *oauthmeta.AuthServerMetadata
}

// checkAuthServer probes one issuer's metadata in the MCP order (CL-06),
// requires an identical issuer (CL-07) and valid endpoints (AS-02), and
// reports S256 (AS-03), RFC 9207 iss (AS-06) and CIMD (AS-15) support.
func (r *runner) checkAuthServer(ctx context.Context, iss string) {
	q := r.quote(iss)
	m, at, err := r.fetchASMetadata(ctx, iss)
	if err != nil {
		r.add("CL-06", "authorization server metadata found", StatusFail, "%s: %v", q, err)
		return
	}
	r.add("CL-06", "authorization server metadata found", StatusPass, "%s: %s", q, at)
	if m.Issuer != iss {
		r.add("CL-07", "metadata issuer identical", StatusFail, "%s names issuer %s; clients must not use it", at, r.quote(m.Issuer))
		return
	}
	r.add("CL-07", "metadata issuer identical", StatusPass, "%s", q)
	r.authServers = append(r.authServers, authServer{issuer: iss, meta: m})
	if err := m.Validate(iss, r.cfg.policy); err != nil {
		r.add("AS-02", "metadata endpoints usable", StatusFail, "%s: %v", q, err)
	} else if !m.SupportsResponseType("code") {
		r.add("AS-02", "metadata endpoints usable", StatusFail, "%s: response_types_supported lacks \"code\"", q)
	} else {
		r.add("AS-02", "metadata endpoints usable", StatusPass, "%s", q)
	}
	r.addEither(m.SupportsS256(), "AS-03", "PKCE S256 advertised", q,
		StatusFail, q+": code_challenge_methods_supported lacks S256; MCP clients refuse this server")
	r.addEither(m.AuthorizationResponseISSParameterSupported, "AS-06", "RFC 9207 iss supported", q,
		StatusWarn, q+": authorization_response_iss_parameter_supported is not true; clients get no mix-up protection")
	r.addEither(m.ClientIDMetadataDocumentSupported, "AS-15", "Client ID Metadata Documents supported", q,
		StatusWarn, q+": client_id_metadata_document_supported is not true; clients must pre-register or use DCR")
}

// fetchASMetadata fetches the first metadata document in the MCP probe
// order, through the guarded fetcher. A 4xx moves on to the next URL; any
// other failure (a refused address, a bad document) stops, as it would
// for a client.
func (r *runner) fetchASMetadata(ctx context.Context, iss string) (*oauthmeta.AuthServerMetadata, string, error) {
	if err := r.cfg.policy.CheckIssuer(iss); err != nil {
		return nil, "", err
	}
	urls, err := oauthmeta.AuthServerMetadataURLs(iss)
	if err != nil {
		return nil, "", err
	}
	var last error
	for _, u := range urls {
		resp, err := r.cfg.fetcher.Get(ctx, u, "application/json")
		var se *safehttp.StatusError
		if errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500 {
			last = fmt.Errorf("%s: %w", u, err)
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", u, err)
		}
		m, err := oauthmeta.ParseAuthServerMetadata(resp.Body)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", u, err)
		}
		return m, u, nil
	}
	return nil, "", fmt.Errorf("none of the well-known URLs served metadata (last: %w)", last)
}
