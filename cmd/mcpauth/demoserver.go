package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const (
	// demoClientIDPrefix and demoClientDocPath: the demo's own client has a
	// production-shaped Client ID Metadata Document URL, which the demo
	// authorization server fetches from the MCP listener instead (the
	// documented local-testing mapping, clientmeta.LoopbackMapping).
	demoClientIDPrefix = "https://client.example/"
	demoClientDocName  = "mcpauth-demo.json"
	demoClientDocPath  = "/client/"
	demoScopeTools     = "mcp:tools"
	demoScopeAdmin     = "mcp:admin"
)

// demoStack is the demo's authorization server and protected MCP server,
// each an http.Handler for its own listener.
type demoStack struct {
	issuer   string
	mcpURL   string
	clientID string
	as       *authserver.Server
	verifier *resource.Verifier
	asMux    http.Handler
	mcpMux   http.Handler
}

func (d *demoStack) Close() {
	d.verifier.Close()
	d.as.Close()
}

// newDemoStack builds the demo servers for the given listeners. obs, when
// not nil, sees every request to both (the narration).
func newDemoStack(asAddr, mcpAddr net.Addr, consent authserver.ConsentMode, logger *slog.Logger, obs *narrator) (*demoStack, error) {
	rsLogger := logger.With("server", "mcp")
	if obs != nil {
		rsLogger = nil // the narration tells every decision
	}
	d := &demoStack{
		issuer:   "http://" + asAddr.String(),
		mcpURL:   "http://" + mcpAddr.String() + "/mcp",
		clientID: demoClientIDPrefix + demoClientDocName,
	}
	resolver, err := clientmeta.NewResolver(clientmeta.ResolverConfig{
		InsecureLoopbackMappings: []clientmeta.LoopbackMapping{{
			ClientIDPrefix: demoClientIDPrefix,
			FetchPrefix:    "http://" + mcpAddr.String() + demoClientDocPath,
		}},
	})
	if err != nil {
		return nil, err
	}
	d.as, err = authserver.New(authserver.Config{
		Issuer:                    d.issuer,
		InsecureAllowHTTPLoopback: true,
		Scopes:                    []string{demoScopeTools, demoScopeAdmin},
		Resources:                 []string{d.mcpURL},
		Consent:                   consent,
		ClientMetadata:            resolver,
		Device:                    &authserver.DeviceConfig{}, // mcpauth login --device
		Logger:                    logger.With("server", "authorization"),
	})
	if err != nil {
		return nil, err
	}
	d.verifier, err = resource.New(resource.Config{
		Resource:                  d.mcpURL,
		Issuers:                   []resource.Issuer{{Issuer: d.issuer}},
		ScopesSupported:           []string{demoScopeTools, demoScopeAdmin},
		Policy:                    demoPolicy(),
		ResourceName:              "mcpauth demo",
		InsecureAllowHTTPLoopback: true,
		Logger:                    rsLogger,
	})
	if err != nil {
		d.as.Close()
		return nil, err
	}
	conns := newDemoConnections(d.issuer, d.as)
	conn, err := demoConnector(conns, d.issuer+"/token")
	if err != nil {
		d.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	d.verifier.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := demoMCPServer()
		addConnectTool(s, conn)
		return s
	},
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	doc, err := clientmeta.NewHandler(clientmeta.HandlerConfig{Document: demoClientDocument(d.clientID)})
	if err != nil {
		d.Close()
		return nil, err
	}
	mux.Handle("GET "+demoClientDocPath+demoClientDocName, doc)
	d.asMux, d.mcpMux = conns, mux
	if obs != nil {
		d.asMux = observe(conns, obs.asRequest, obs.asResponse)
		d.mcpMux = observe(mux, obs.mcpServerRequest, obs.mcpServerResponse)
	}
	return d, nil
}

// demoPolicy: every call needs mcp:tools; admin_echo also needs mcp:admin.
func demoPolicy() *resource.Policy {
	return &resource.Policy{
		Default: []string{demoScopeTools},
		Tools:   map[string][]string{"admin_echo": {demoScopeAdmin}},
	}
}

// demoClientDocument is the Client ID Metadata Document of the demo's own
// client (and of `mcpauth login --client-metadata-url` against the demo).
func demoClientDocument(clientID string) *clientmeta.Document {
	return &clientmeta.Document{
		ClientID: clientID,
		ClientMetadata: oauthmeta.ClientMetadata{
			ClientName:              "mcpauth demo client",
			RedirectURIs:            []string{"http://127.0.0.1/callback"},
			GrantTypes:              []string{oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: oauthmeta.AuthMethodNone,
		},
	}
}

type echoArgs struct {
	Message string `json:"message" jsonschema:"the text to send back"`
}

// identity is what whoami returns: the validated claims, never the token.
type identity struct {
	Subject   string    `json:"subject"`
	ClientID  string    `json:"client_id"`
	Issuer    string    `json:"issuer"`
	Audience  []string  `json:"audience"`
	Scopes    []string  `json:"scopes"`
	ExpiresAt time.Time `json:"expires_at"`
}

// demoMCPServer is the demo's MCP server, built with the official Go SDK.
// Tool scopes are enforced by the resource middleware (demoPolicy), before
// the SDK sees the request.
func demoMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpauth-demo", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Send the message back (scope mcp:tools)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return textResult(in.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "admin_echo", Description: "Send the message back in capitals (scope mcp:admin)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return textResult(strings.ToUpper(in.Message)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Show the identity the server validated (never the token)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, identity, error) {
			info := resource.TokenInfoFromContext(ctx)
			if info == nil {
				return nil, identity{}, fmt.Errorf("no validated identity")
			}
			return nil, identity{Subject: info.Subject, ClientID: info.ClientID, Issuer: info.Issuer,
				Audience: info.Audience, Scopes: info.Scopes, ExpiresAt: info.Expiry.UTC()}, nil
		})
	return s
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
