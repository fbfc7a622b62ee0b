package resource

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// ErrConnectRequired is wrapped by an exchange the authorization server
// refused because the user has not connected their account at the
// provider named as audience: the error is also a [*ConnectRequiredError]
// with the URL where they connect it. [Connector.ProviderToken] turns it
// into a URL-mode elicitation.
var ErrConnectRequired = errors.New("resource: the user has not connected the provider")

// ConnectRequiredError is the refusal of an exchange for a provider the
// user has not connected. It wraps [ErrConnectRequired] and the server's
// invalid_grant *[oauthmeta.Error].
type ConnectRequiredError struct {
	// Provider is the audience that was asked for.
	Provider string
	// ConnectURI is where the user connects the account: an absolute
	// https URL (http on loopback with InsecureAllowHTTPLoopback) at the
	// authorization server's origin.
	ConnectURI string
	oauth      *oauthmeta.Error
}

func (e *ConnectRequiredError) Error() string {
	return fmt.Sprintf("resource: the user has not connected %s", e.Provider)
}

// Unwrap returns [ErrConnectRequired] and the server's OAuth error.
func (e *ConnectRequiredError) Unwrap() []error {
	return []error{ErrConnectRequired, e.oauth}
}

// connectRequired reads a 400 invalid_grant refusal of an exchange for
// provider: a *ConnectRequiredError when its connect_uri (decoded with
// the refusal by the one JSON policy, within the exchange's size bound) is
// an acceptable URL at the token endpoint's origin, nil otherwise (the
// refusal is then a plain invalid_grant).
func (e *Exchanger) connectRequired(provider string, oe *oauthmeta.Error) *ConnectRequiredError {
	if oe.ConnectURI == "" {
		return nil
	}
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: e.cfg.InsecureAllowHTTPLoopback}
	if p.CheckURL(oe.ConnectURI) != nil {
		return nil
	}
	u, err := url.Parse(oe.ConnectURI)
	if err != nil || !safehttp.SameOrigin(u, e.endpoint) || u.RawQuery == "" && u.Path == "" {
		return nil
	}
	return &ConnectRequiredError{Provider: provider, ConnectURI: oe.ConnectURI, oauth: oe}
}
