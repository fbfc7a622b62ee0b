package authserver

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Endpoint paths, relative to the issuer.
const (
	pathAuthorize  = "/authorize"
	pathConsent    = "/consent"
	pathToken      = "/token"
	pathRegister   = "/register"
	pathIntrospect = "/introspect"
	pathRevoke     = "/revoke"
	pathJWKS       = "/jwks.json"
	pathAssets     = "/assets/consent.css"
)

// endpoint returns the absolute URL of an endpoint under the issuer.
func (s *Server) endpoint(p string) string { return s.cfg.issuerOrigin + s.cfg.issuerPath + p }

// Metadata returns the RFC 8414 document the server publishes (with
// [Config.InsecureFaults] applied).
func (s *Server) Metadata() oauthmeta.AuthServerMetadata {
	secretMethods := []string{oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost}
	allMethods := append([]string{oauthmeta.AuthMethodNone}, secretMethods...)
	tokenMethods := append(slices.Clone(allMethods), oauthmeta.AuthMethodPrivateKeyJWT)
	m := oauthmeta.AuthServerMetadata{
		Issuer:                                     s.cfg.Issuer,
		AuthorizationEndpoint:                      s.endpoint(pathAuthorize),
		TokenEndpoint:                              s.endpoint(pathToken),
		JWKSURI:                                    s.endpoint(pathJWKS),
		ScopesSupported:                            s.cfg.Scopes,
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        s.grantTypes(),
		AuthorizationGrantProfilesSupported:        s.grantProfiles(),
		TokenEndpointAuthMethodsSupported:          tokenMethods,
		TokenEndpointAuthSigningAlgValuesSupported: jwa.Defaults(jwa.ClientAssertion),
		DPoPSigningAlgValuesSupported:              s.dpopAlgorithms(),
		RevocationEndpoint:                         s.endpoint(pathRevoke),
		RevocationEndpointAuthMethodsSupported:     allMethods,
		IntrospectionEndpoint:                      s.endpoint(pathIntrospect),
		IntrospectionEndpointAuthMethodsSupported:  secretMethods,
		CodeChallengeMethodsSupported:              []string{oauthmeta.PKCEMethodS256},
		AuthorizationResponseISSParameterSupported: true,
		ClientIDMetadataDocumentSupported:          s.cimd != nil,
	}
	if !s.cfg.DisableRegistration {
		m.RegistrationEndpoint = s.endpoint(pathRegister)
	}
	f := s.cfg.InsecureFaults
	if f.MetadataIssuerMismatch {
		m.Issuer = s.cfg.Issuer + "/other"
	}
	if f.OmitPKCEMethods {
		m.CodeChallengeMethodsSupported = nil
	}
	if f.OmitIssSupported {
		m.AuthorizationResponseISSParameterSupported = false
	}
	return m
}

// handleMetadata serves RFC 8414 metadata at the path-inserted well-known
// URLs, and the same document as OpenID Connect discovery (requirements
// AS-02, AS-03, AS-15).
func (s *Server) handleMetadata(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(s.metadata)
}

// handleJWKS serves the public signing keys (requirement AS-11).
func (s *Server) handleJWKS(w http.ResponseWriter, _ *http.Request) {
	body, err := json.Marshal(s.keys.jwks(s.clock.Now()))
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(body)
}
