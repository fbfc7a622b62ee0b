package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// canonicalResource returns the canonical form of an MCP server URL and
// checks it against the URL policy.
func (c *Client) canonicalResource(raw string) (string, error) {
	r, err := oauthmeta.CanonicalResource(raw)
	if err != nil {
		return "", fmt.Errorf("%w: MCP server URL: %w", ErrConfig, err)
	}
	if strings.Contains(r, "?") {
		return "", fmt.Errorf("%w: MCP server URL has a query (RFC 8707 §2)", ErrConfig)
	}
	if err := c.policy.CheckURL(r); err != nil {
		return "", fmt.Errorf("%w: MCP server URL: %w", errUnsafeURL, err)
	}
	return r, nil
}

// discover returns the discovery state for resource (canonical): the
// cached one unless fresh is set or it expired, otherwise the result of
// protected resource metadata discovery and authorization
// server discovery. headerURL is the challenge's
// resource_metadata, or "".
func (c *Client) discover(ctx context.Context, resource, headerURL string, fresh bool) (*tokenstore.Discovery, error) {
	if !fresh {
		if d, err := c.store.Discovery(ctx, resource); err == nil && c.clock.Now().Before(d.Expires) && d.AuthServer != nil {
			return d, nil
		}
	}
	now := c.clock.Now()
	d := &tokenstore.Discovery{Resource: resource, FetchedAt: now}
	ttl := c.cfg.MetadataTTL
	var issuers []string
	prm, prmURL, prmTTL, err := c.fetchResourceMetadata(ctx, resource, headerURL)
	switch {
	case err == nil:
		d.ResourceIndicator, d.ResourceMetadataURL = prm.Resource, prmURL
		d.ScopesSupported = slices.Clone(prm.ScopesSupported)
		d.DPoPSigningAlgValuesSupported = slices.Clone(prm.DPoPSigningAlgValuesSupported)
		d.DPoPBoundAccessTokensRequired = prm.DPoPBoundAccessTokensRequired
		issuers = prm.AuthorizationServers
		ttl = min(ttl, prmTTL)
	case errors.Is(err, errNoResourceMetadata) && c.cfg.InsecureLegacy20250326:
		// MCP 2025-03-26: the server's origin is its authorization server.
		_, origin, _ := oauthmeta.ProtectedResourceMetadataRootURL(resource)
		d.ResourceIndicator, d.Legacy = resource, true
		issuers = []string{origin}
		c.log.WarnContext(ctx, "no protected resource metadata; using the 2025-03-26 fallback", "resource", resource)
	default:
		return nil, err
	}
	md, mdTTL, defaults, err := c.chooseAuthServer(ctx, resource, issuers, d.Legacy)
	if err != nil {
		return nil, err
	}
	d.Issuer, d.AuthServer, d.DefaultEndpoints = md.Issuer, md, defaults
	d.Expires = now.Add(min(ttl, mdTTL))
	if err := c.store.PutDiscovery(ctx, d); err != nil {
		return nil, err
	}
	c.log.DebugContext(ctx, "discovered authorization server", "resource", resource, "issuer", d.Issuer)
	return d, nil
}

// prmCandidate is one place protected resource metadata may be found and
// the resource identifier it must then carry (RFC 9728 §3.3).
type prmCandidate struct {
	url, expected string
	viaHeader     bool
}

// fetchResourceMetadata probes, in order, the challenge's URL, the
// path-inserted well-known URL and the root well-known URL,
// stops at the first document served, and validates it: a
// document for another resource aborts discovery.
func (c *Client) fetchResourceMetadata(ctx context.Context, resource, headerURL string) (*oauthmeta.ProtectedResourceMetadata, string, time.Duration, error) {
	pathURL, err := oauthmeta.ProtectedResourceMetadataURL(resource)
	if err != nil {
		return nil, "", 0, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	rootURL, origin, _ := oauthmeta.ProtectedResourceMetadataRootURL(resource)
	var cands []prmCandidate
	if headerURL != "" {
		cands = append(cands, prmCandidate{url: headerURL, expected: resource, viaHeader: true})
	}
	for _, cand := range []prmCandidate{{url: pathURL, expected: resource}, {url: rootURL, expected: origin}} {
		if !slices.ContainsFunc(cands, func(x prmCandidate) bool { return x.url == cand.url }) {
			cands = append(cands, cand)
		}
	}
	for _, cand := range cands {
		resp, err := c.fetcher.Get(ctx, cand.url, "application/json")
		if probeMiss(err) {
			continue
		}
		if err != nil {
			return nil, "", 0, wrapFetch(ErrDiscovery, "protected resource metadata", err)
		}
		prm, err := oauthmeta.ParseProtectedResourceMetadata(resp.Body)
		if err != nil {
			return nil, "", 0, fmt.Errorf("%w: protected resource metadata: %w", errInvalidMetadata, err)
		}
		if err := c.validateResourceMetadata(prm, cand, resource); err != nil {
			return nil, "", 0, err
		}
		return prm, cand.url, c.ttl(resp.Header), nil
	}
	return nil, "", 0, errNoResourceMetadata
}

// validateResourceMetadata applies RFC 9728 §3.3 and the MCP rules, with
// the documented prefix relaxation when configured.
func (c *Client) validateResourceMetadata(prm *oauthmeta.ProtectedResourceMetadata, cand prmCandidate, resource string) error {
	err := prm.Validate(cand.expected, c.policy)
	if errors.Is(err, oauthmeta.ErrResourceMismatch) && c.cfg.InsecureAllowResourcePrefix && resourcePrefix(prm.Resource, resource) {
		probe := *prm
		probe.Resource = cand.expected
		err = probe.Validate(cand.expected, c.policy)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, oauthmeta.ErrResourceMismatch):
		return fmt.Errorf("%w: %w", errResourceMismatch, err)
	default:
		return fmt.Errorf("%w: protected resource metadata: %w", errInvalidMetadata, err)
	}
}

// resourcePrefix reports whether prefix names the same origin as resource
// and a path that is resource's path or one of its ancestors, on segment
// boundaries ("https://h/a" covers "https://h/a/mcp", not "https://h/ab").
func resourcePrefix(prefix, resource string) bool {
	p, err := oauthmeta.CanonicalResource(prefix)
	if err != nil || strings.Contains(p, "?") {
		return false
	}
	if p == resource {
		return true
	}
	pu, err1 := url.Parse(p)
	ru, err2 := url.Parse(resource)
	if err1 != nil || err2 != nil || pu.Scheme != ru.Scheme || pu.Host != ru.Host {
		return false
	}
	pp := strings.TrimSuffix(pu.EscapedPath(), "/")
	return pp == "" || ru.EscapedPath() == pp || strings.HasPrefix(ru.EscapedPath(), pp+"/")
}

// maxAuthServerCandidates bounds how many authorization servers one
// discovery probes, so that metadata listing many (a hostile resource)
// cannot make the client send an unbounded number of requests.
const maxAuthServerCandidates = 5

// chooseAuthServer applies the selection policy to issuers and returns the
// metadata of the first authorization server that is reachable and valid, among
// the first maxAuthServerCandidates. defaults reports assumed 2025-03-26
// endpoints.
func (c *Client) chooseAuthServer(ctx context.Context, resource string, issuers []string, legacy bool) (*oauthmeta.AuthServerMetadata, time.Duration, bool, error) {
	ordered := issuers
	if c.cfg.SelectAuthServer != nil {
		var err error
		if ordered, err = c.cfg.SelectAuthServer(ctx, resource, slices.Clone(issuers)); err != nil {
			return nil, 0, false, fmt.Errorf("%w: selection policy: %w", errNoAuthServer, err)
		}
	}
	var errs []error
	tried := 0
	for _, issuer := range ordered {
		if !slices.Contains(issuers, issuer) {
			errs = append(errs, fmt.Errorf("selection policy returned an issuer the resource does not list"))
			continue
		}
		if tried == maxAuthServerCandidates {
			errs = append(errs, fmt.Errorf("only the first %d authorization servers are tried", maxAuthServerCandidates))
			break
		}
		tried++
		md, ttl, defaults, err := c.fetchAuthServerMetadata(ctx, issuer, legacy)
		if err == nil {
			return md, ttl, defaults, nil
		}
		c.log.WarnContext(ctx, "authorization server not usable", "issuer", issuer, "error", err)
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, 0, false, fmt.Errorf("%w: none listed", errNoAuthServer)
	}
	return nil, 0, false, fmt.Errorf("%w: %w", errNoAuthServer, errors.Join(errs...))
}

// fetchAuthServerMetadata probes the well-known URLs of issuer in the MCP order
// and validates the first document served: identical issuer, safe endpoints,
// S256, response type code.
func (c *Client) fetchAuthServerMetadata(ctx context.Context, issuer string, legacy bool) (*oauthmeta.AuthServerMetadata, time.Duration, bool, error) {
	if err := c.policy.CheckIssuer(issuer); err != nil {
		return nil, 0, false, fmt.Errorf("%w: issuer: %w", errUnsafeURL, err)
	}
	urls, err := oauthmeta.AuthServerMetadataURLs(issuer)
	if err != nil {
		return nil, 0, false, fmt.Errorf("%w: issuer: %w", errInvalidMetadata, err)
	}
	for _, u := range urls {
		resp, err := c.fetcher.Get(ctx, u, "application/json")
		if probeMiss(err) {
			continue
		}
		if err != nil {
			return nil, 0, false, wrapFetch(ErrDiscovery, "authorization server metadata", err)
		}
		md, err := oauthmeta.ParseAuthServerMetadata(resp.Body)
		if err != nil {
			return nil, 0, false, fmt.Errorf("%w: authorization server metadata: %w", errInvalidMetadata, err)
		}
		if err := checkAuthServerMetadata(md, issuer, c.policy, c.cfg.AuthServers[issuer]); err != nil {
			return nil, 0, false, err
		}
		return md, c.ttl(resp.Header), false, nil
	}
	if legacy {
		return legacyMetadata(issuer), c.cfg.MetadataTTL, true, nil
	}
	return nil, 0, false, errNoAuthServerMetadata
}

// checkAuthServerMetadata applies CL-07, CL-22 and CL-08 to a document
// fetched for issuer; o is the issuer's options (AssumeS256).
func checkAuthServerMetadata(md *oauthmeta.AuthServerMetadata, issuer string, p oauthmeta.URLPolicy, o AuthServerOptions) error {
	if err := md.Validate(issuer, p); err != nil {
		if errors.Is(err, oauthmeta.ErrIssuerMismatch) {
			return fmt.Errorf("%w: %w", errIssuerMismatch, err)
		}
		return fmt.Errorf("%w: authorization server metadata: %w", errInvalidMetadata, err)
	}
	if !o.pkceAccepted(md) {
		return errPKCEUnsupported
	}
	if len(md.ResponseTypesSupported) > 0 && !md.SupportsResponseType("code") {
		return fmt.Errorf("%w: response_types_supported lacks code", errInvalidMetadata)
	}
	return nil
}

// legacyMetadata is what MCP 2025-03-26 assumes of an authorization server
// without metadata: the default endpoints at its origin.
func legacyMetadata(issuer string) *oauthmeta.AuthServerMetadata {
	base := strings.TrimSuffix(issuer, "/")
	return &oauthmeta.AuthServerMetadata{
		Issuer:                        issuer,
		AuthorizationEndpoint:         base + "/authorize",
		TokenEndpoint:                 base + "/token",
		RegistrationEndpoint:          base + "/register",
		ResponseTypesSupported:        []string{"code"},
		CodeChallengeMethodsSupported: []string{oauthmeta.PKCEMethodS256},
	}
}

// probeMiss reports whether a well-known probe found nothing usable there,
// so the next location should be tried: an error status, a redirect, or a
// non-JSON page (a web application's catch-all route).
func probeMiss(err error) bool {
	return err != nil && (errors.Is(err, safehttp.ErrStatus) || errors.Is(err, safehttp.ErrRedirect) ||
		errors.Is(err, safehttp.ErrContentType))
}

// ttl returns how long a fetched document may be reused: its max-age,
// nothing for no-store or no-cache, else the configured default; never
// more than MaxMetadataTTL.
func (c *Client) ttl(h http.Header) time.Duration {
	ttl := c.cfg.MetadataTTL
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch ascii.ToLower(name) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
					ttl = time.Duration(min(n, int64(MaxMetadataTTL/time.Second))) * time.Second
				}
			}
		}
	}
	return min(ttl, MaxMetadataTTL)
}
