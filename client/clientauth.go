package client

import (
	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// tokenAuthMethod chooses how the client authenticates at the token
// endpoint of the server md describes (OAuth 2.1 §2.4): the registered
// method when there is one; a public client ("none") without a secret;
// otherwise the first of client_secret_basic and client_secret_post the
// server supports. A Client ID Metadata Document client never sends a
// secret (requirement CL-25).
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

// oauth2Credentials maps an authentication method to x/oauth2's settings:
// "none" sends client_id in the body and no secret.
func oauth2Credentials(reg *tokenstore.Registration, method string) (id, secret string, style oauth2.AuthStyle) {
	switch method {
	case oauthmeta.AuthMethodClientSecretBasic:
		return reg.ClientID, reg.ClientSecret, oauth2.AuthStyleInHeader
	case oauthmeta.AuthMethodClientSecretPost:
		return reg.ClientID, reg.ClientSecret, oauth2.AuthStyleInParams
	default:
		return reg.ClientID, "", oauth2.AuthStyleInParams
	}
}
