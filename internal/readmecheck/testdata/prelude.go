package readmeblocks

// What the README's examples take as given.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/resource"
)

var (
	ctx          context.Context
	t            *testing.T // in a test
	mux          *http.ServeMux
	getServer    func(*http.Request) *mcp.Server
	server       *mcp.Server
	impl         *mcp.Implementation
	store        tokenstore.Store
	v            *resource.Verifier // from the first resource example
	serverURL    string
	issuer       string
	inboundToken string
	secret       string
	idpSecret    string
	nonceKey     []byte
	key32        []byte
	pemBytes     []byte
	jwks         json.RawMessage
	sso          interface {
		IDToken(context.Context) (string, error)
	}
)
