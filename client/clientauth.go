package client

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// clientAuth is how the client authenticates at one token endpoint (OAuth
// 2.1 §2.4): validated [Credentials], or a registration.
type clientAuth struct {
	method   string
	clientID string
	secret   string
	signer   *jwtassert.ClientAssertionSigner // private_key_jwt only
}

// registeredAuth returns the client authentication of reg at the server
// md describes, by [tokenAuthMethod].
func registeredAuth(reg *tokenstore.Registration, md *oauthmeta.AuthServerMetadata) *clientAuth {
	a := &clientAuth{method: tokenAuthMethod(reg, md), clientID: reg.ClientID}
	if a.method != oauthmeta.AuthMethodNone {
		a.secret = reg.ClientSecret
	}
	return a
}

// tokenAuthMethod chooses how the client authenticates at the token
// endpoint of the server md describes (OAuth 2.1 §2.4): the registered
// method when there is one; a public client ("none") without a secret;
// otherwise the first of client_secret_basic and client_secret_post the
// server supports. A Client ID Metadata Document client never sends a
// secret.
func tokenAuthMethod(reg *tokenstore.Registration, md *oauthmeta.AuthServerMetadata) string {
	if reg.Method == tokenstore.MethodCIMD || reg.ClientSecret == "" {
		return oauthmeta.AuthMethodNone
	}
	switch reg.TokenEndpointAuthMethod {
	case oauthmeta.AuthMethodNone, oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost:
		return reg.TokenEndpointAuthMethod
	}
	for _, m := range []string{oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost} {
		if md.SupportsTokenEndpointAuthMethod(m) {
			return m
		}
	}
	if md.SupportsTokenEndpointAuthMethod(oauthmeta.AuthMethodNone) {
		return oauthmeta.AuthMethodNone
	}
	return oauthmeta.AuthMethodClientSecretBasic
}

// oauth2Auth is client authentication in golang.org/x/oauth2's terms.
type oauth2Auth struct {
	id, secret string
	style      oauth2.AuthStyle
	params     url.Values // body parameters x/oauth2 does not add itself
	sent       []string   // the credentials, redacted from errors
}

// encode is the one encoder of client authentication for every token
// request; x/oauth2 puts the result on the wire. The style is always
// explicit: x/oauth2's auto-detection would send a refused request again
// with the credentials moved. client_id is in the body with every method,
// client_secret_basic included (RFC 6749 §3.2.1 allows it there, and some
// servers, the MCP Python SDK's example among them, require it). audience
// is the "aud" of a private_key_jwt assertion (RFC 7523 §3).
func (a *clientAuth) encode(audience string) (*oauth2Auth, error) {
	o := &oauth2Auth{id: a.clientID, style: oauth2.AuthStyleInParams, params: url.Values{}, sent: []string{a.secret}}
	switch a.method {
	case oauthmeta.AuthMethodClientSecretBasic: // RFC 6749 §2.3.1
		o.secret, o.style = a.secret, oauth2.AuthStyleInHeader
		o.params.Set("client_id", a.clientID)
	case oauthmeta.AuthMethodClientSecretPost:
		o.secret = a.secret
	case oauthmeta.AuthMethodPrivateKeyJWT: // RFC 7523 §2.2
		assertion, err := a.signer.Sign(audience)
		if err != nil {
			return nil, fmt.Errorf("client: client assertion: %w", err)
		}
		o.params.Set("client_assertion_type", jwtassert.ClientAssertionType)
		o.params.Set("client_assertion", assertion)
		o.sent = append(o.sent, assertion)
	}
	return o, nil
}

// addTo puts o on a request that x/oauth2 does not send (RFC 7009
// revocation) as x/oauth2 puts it on a token request: the method's
// parameters, and client_id and the secret when there is one, into form;
// with client_secret_basic it returns the Authorization header with the
// form-encoded id and secret instead (RFC 6749 §2.3.1), else "".
func (o *oauth2Auth) addTo(form url.Values) (authorization string) {
	maps.Copy(form, o.params)
	if o.style == oauth2.AuthStyleInHeader {
		cred := url.QueryEscape(o.id) + ":" + url.QueryEscape(o.secret)
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(cred))
	}
	form.Set("client_id", o.id)
	if o.secret != "" {
		form.Set("client_secret", o.secret)
	}
	return ""
}
