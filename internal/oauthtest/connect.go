package oauthtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Connections is the token endpoint of an authorization server with
// connected third-party accounts, as a resource server sees it: a token
// exchange whose audience is a provider answers the provider's token when
// the subject token's user has connected it, and otherwise 400
// invalid_grant with a connect_uri at Base (see oauthmeta.ConnectURI).
// Mount Handler as the AS's "/token" fault. It is safe for concurrent use.
type Connections struct {
	// Base is the origin the connect_uri names (the AS's URL).
	Base string
	// ClientID and Secret are the resource server's credentials
	// (client_secret_basic).
	ClientID, Secret string
	// Refusal, when set, replaces the body of the not-connected answer
	// (a foreign connect_uri, a malformed one).
	Refusal func(provider string) string

	mu        sync.Mutex
	subjects  map[string]string // subject token -> user
	connected map[[2]string]bool
	refs      int
	exchanges int
}

// Subject makes token an access token of user.
func (c *Connections) Subject(token, user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subjects == nil {
		c.subjects = map[string]string{}
	}
	c.subjects[token] = user
}

// Connect links user's account at provider.
func (c *Connections) Connect(user, provider string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.connected == nil {
		c.connected = map[[2]string]bool{}
	}
	c.connected[[2]string{user, provider}] = true
}

// ProviderToken is the token the exchange issues for user at provider.
func ProviderToken(user, provider string) string { return "provider-secret-" + provider + "-" + user }

// Exchanges is how many exchanges were answered.
func (c *Connections) Exchanges() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exchanges
}

// Handler answers token exchanges.
func (c *Connections) Handler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	id, secret, ok := r.BasicAuth()
	if !ok || id != c.ClientID || secret != c.Secret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	form, err := httpform.Post(w, r, 64<<10)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
		return
	}
	provider := form.Get("audience")
	c.mu.Lock()
	c.exchanges++
	user, known := c.subjects[form.Get("subject_token")]
	linked := c.connected[[2]string{user, provider}]
	c.refs++
	ref := c.refs
	c.mu.Unlock()
	switch {
	case form.Get("grant_type") != oauthmeta.GrantTypeTokenExchange || !known || provider == "":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"unknown subject token"}`))
	case linked:
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": ProviderToken(user, provider), "token_type": "Bearer",
			"issued_token_type": oauthmeta.TokenTypeAccessToken, "expires_in": 600})
	default:
		w.WriteHeader(http.StatusBadRequest)
		if c.Refusal != nil {
			_, _ = w.Write([]byte(c.Refusal(provider)))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant",
			"error_description":       "the user has not connected " + provider,
			oauthmeta.ParamConnectURI: fmt.Sprintf("%s/connect/%s?ref=opaque-%d", c.Base, provider, ref)})
	}
}
