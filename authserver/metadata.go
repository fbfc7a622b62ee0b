package authserver

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/mcpauth/mcpauth/internal/clock"
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
func (st *settings) endpoint(p string) string { return st.issuerOrigin + st.issuerPath + p }

// discovery serves the RFC 8414 metadata and the JWK Set.
type discovery struct {
	cfg *settings
	// What the metadata says of the endpoints: the registered grant
	// types, the JWT-bearer grant's profiles, the DPoP algorithms (nil
	// without DPoP), and whether URL client_ids are resolved.
	grantTypes, grantProfiles, dpopAlgorithms []string
	clientMetadataDocuments                   bool
	device                                    bool // the device authorization grant is offered

	keys    *keyring
	clock   clock.Func
	encoded []byte // the document, encoded once
}

// encode encodes the document once, for handleMetadata.
func (d *discovery) encode() error {
	m := d.document()
	var err error
	d.encoded, err = json.Marshal(&m)
	return err
}

// document is the RFC 8414 document the server publishes, fresh at each
// call.
func (d *discovery) document() oauthmeta.AuthServerMetadata {
	secretMethods := []string{oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost}
	allMethods := append([]string{oauthmeta.AuthMethodNone}, secretMethods...)
	tokenMethods := append(slices.Clone(allMethods), oauthmeta.AuthMethodPrivateKeyJWT)
	m := oauthmeta.AuthServerMetadata{
		Issuer:                                     d.cfg.Issuer,
		AuthorizationEndpoint:                      d.cfg.endpoint(pathAuthorize),
		TokenEndpoint:                              d.cfg.endpoint(pathToken),
		JWKSURI:                                    d.cfg.endpoint(pathJWKS),
		ScopesSupported:                            d.cfg.Scopes,
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        slices.Clone(d.grantTypes),
		AuthorizationGrantProfilesSupported:        slices.Clone(d.grantProfiles),
		TokenEndpointAuthMethodsSupported:          tokenMethods,
		TokenEndpointAuthSigningAlgValuesSupported: jwa.Defaults(jwa.ClientAssertion),
		DPoPSigningAlgValuesSupported:              slices.Clone(d.dpopAlgorithms),
		RevocationEndpoint:                         d.cfg.endpoint(pathRevoke),
		RevocationEndpointAuthMethodsSupported:     allMethods,
		IntrospectionEndpoint:                      d.cfg.endpoint(pathIntrospect),
		IntrospectionEndpointAuthMethodsSupported:  secretMethods,
		CodeChallengeMethodsSupported:              []string{oauthmeta.PKCEMethodS256},
		AuthorizationResponseISSParameterSupported: true,
		ClientIDMetadataDocumentSupported:          d.clientMetadataDocuments,
	}
	if d.device {
		m.DeviceAuthorizationEndpoint = d.cfg.endpoint(pathDeviceAuthorize)
	}
	if !d.cfg.DisableRegistration {
		m.RegistrationEndpoint = d.cfg.endpoint(pathRegister)
	}
	return m
}

// handleMetadata serves RFC 8414 metadata at the path-inserted well-known
// URLs, and the same document as OpenID Connect discovery (requirements
// AS-02, AS-03, AS-15).
func (d *discovery) handleMetadata(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(d.encoded)
}

// handleJWKS serves the public signing keys (requirement AS-11).
func (d *discovery) handleJWKS(w http.ResponseWriter, _ *http.Request) {
	body, err := json.Marshal(d.keys.jwks(d.clock.Now()))
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
