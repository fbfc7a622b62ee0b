package resource

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

func (v *Verifier) buildMetadata(cfg *Config) error {
	m := oauthmeta.ProtectedResourceMetadata{
		Resource:               v.resource,
		AuthorizationServers:   v.issuerOrder,
		ScopesSupported:        cfg.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           cfg.ResourceName,
		ResourceDocumentation:  cfg.ResourceDocumentation,
	}
	if v.dpop != nil { // RFC 9728 §2, RFC 9449 §7
		m.DPoPSigningAlgValuesSupported = v.dpop.algs
		m.DPoPBoundAccessTokensRequired = v.dpop.mode == DPoPRequired
	}
	if m.ResourceDocumentation != "" {
		if err := cfg.urlPolicy().CheckURL(m.ResourceDocumentation); err != nil {
			return fmt.Errorf("%w: resource documentation: %w", ErrInvalidConfig, err)
		}
	}
	b, err := json.Marshal(&m)
	if err != nil {
		return fmt.Errorf("%w: metadata: %w", ErrInvalidConfig, err)
	}
	v.metadataJSON = b
	return nil
}

// Metadata returns the RFC 9728 protected resource metadata document the
// Verifier serves: resource is the canonical resource byte for
// byte, authorization_servers lists the configured issuers,
// scopes_supported is Config.ScopesSupported, and bearer_methods_supported
// is ["header"]. With DPoP enabled, dpop_signing_alg_values_supported lists
// the proof algorithms, and dpop_bound_access_tokens_required is true in
// [DPoPRequired] mode.
func (v *Verifier) Metadata() *oauthmeta.ProtectedResourceMetadata {
	m, _ := oauthmeta.ParseProtectedResourceMetadata(v.metadataJSON)
	return m
}

// MetadataHandler serves the metadata document (RFC 9728 §3.2) to GET and HEAD,
// with CORS for any origin (it is public), a max-age of Config.MetadataTTL, and
// 204 to OPTIONS. Other methods get
// 405. Mount it at the path of [Verifier.MetadataURL] (see
// [Verifier.Mount]).
func (v *Verifier) MetadataHandler() http.Handler {
	cacheControl := "public, max-age=" + strconv.Itoa(int(v.metadataTTL.Seconds()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Accept, MCP-Protocol-Version")
		switch r.Method {
		case http.MethodOptions:
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet, http.MethodHead:
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", cacheControl)
			h.Set("Content-Length", strconv.Itoa(len(v.metadataJSON)))
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(v.metadataJSON)
			}
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
}

// Mount registers, on mux, the protected MCP handler at the resource's
// path and the metadata at its path-inserted well-known path (RFC 9728
// §3.1): for https://h/a/mcp, "/a/mcp" and
// "/.well-known/oauth-protected-resource/a/mcp". A resource without a path
// is mounted at "/{$}" (the root only). It panics, like
// [http.ServeMux.Handle], if a pattern is already registered.
func (v *Verifier) Mount(mux *http.ServeMux, mcp http.Handler) {
	mux.Handle(v.ResourcePath(), v.Middleware(mcp))
	mux.Handle(v.MetadataPath(), v.MetadataHandler())
}

// ResourcePath returns the ServeMux pattern of the resource's path.
func (v *Verifier) ResourcePath() string {
	u, _ := url.Parse(v.resource)
	if u.EscapedPath() == "" || u.EscapedPath() == "/" {
		return "/{$}"
	}
	return pathPattern(u)
}

// MetadataPath returns the ServeMux pattern of the metadata's path.
func (v *Verifier) MetadataPath() string {
	u, _ := url.Parse(v.metadataURL)
	return pathPattern(u)
}

// pathPattern quotes a URL path for ServeMux: "{" and "}" would otherwise
// be wildcards, and a trailing "/" is kept exact.
func pathPattern(u *url.URL) string {
	p := u.Path
	p = strings.NewReplacer("{", "%7B", "}", "%7D").Replace(p)
	if strings.HasSuffix(p, "/") {
		p += "{$}"
	}
	return p
}
