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
	"github.com/mcpauth/mcpauth/authserver/upstream"
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
	// demoIdPPath and demoProviderPath are the issuers' paths of the
	// demo's identity provider and third-party provider, which share a
	// loopback listener.
	demoIdPPath      = "/idp"
	demoProviderPath = "/provider"
)

// demoStack is the demo's authorization server and protected MCP server,
// each an http.Handler for its own listener.
type demoStack struct {
	issuer   string
	mcpURL   string
	clientID string
	as       *authserver.Server
	// idp is the identity provider the authorization server signs users
	// in at; provider is the third-party provider they connect. Both are
	// nil without the connect chapter.
	idp, provider *demoOAuthProvider
	// rsID and rsSecret are the MCP server's credentials at the
	// authorization server, for the token exchange.
	rsID, rsSecret string
	closers        []upstream.Provider
	verifier       *resource.Verifier
	asMux          http.Handler
	mcpMux         http.Handler
	// idpMux serves idp and provider; nil without the connect chapter.
	idpMux *http.ServeMux
}

func (d *demoStack) Close() {
	if d.verifier != nil {
		d.verifier.Close()
	}
	if d.as != nil {
		d.as.Close()
	}
	for _, p := range d.closers {
		_ = p.Close()
	}
}

// newDemoStack builds the demo servers for the given listeners. obs, when
// not nil, sees every request to both (the narration). connect adds the
// connect chapter: the authorization server signs users in at the
// identity provider on idpAddr, lets them connect their account at the
// third-party provider there, and the MCP server gets a tool that needs
// it.
func newDemoStack(asAddr, mcpAddr, idpAddr net.Addr, consent authserver.ConsentMode, connect bool, logger *slog.Logger, obs *narrator) (*demoStack, error) {
	rsLogger := logger.With("server", "mcp")
	if obs != nil {
		rsLogger = nil // the narration tells every decision
	}
	d := &demoStack{
		issuer:   "http://" + asAddr.String(),
		mcpURL:   "http://" + mcpAddr.String() + "/mcp",
		clientID: demoClientIDPrefix + demoClientDocName,
		rsID:     "demo-mcp-server",
		rsSecret: demoRandom(24),
	}
	resolver, err := clientmeta.NewResolver(clientmeta.ResolverConfig{
		InsecureLoopbackMappings: []clientmeta.LoopbackMapping{{
			ClientIDPrefix: demoClientIDPrefix,
			FetchPrefix:    "http://" + mcpAddr.String() + demoClientDocPath,
		}},
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	cfg := authserver.Config{
		Issuer:                    d.issuer,
		InsecureAllowHTTPLoopback: true,
		Scopes:                    []string{demoScopeTools, demoScopeAdmin},
		Resources:                 []string{d.mcpURL},
		Consent:                   consent,
		ClientMetadata:            resolver,
		Device:                    &authserver.DeviceConfig{}, // mcpauth login --device
		Logger:                    logger.With("server", "authorization"),
	}
	if connect {
		if err := d.addConnect(&cfg, idpAddr); err != nil {
			d.Close()
			return nil, err
		}
	}
	d.as, err = authserver.New(cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	if connect {
		d.idp.register(d.as.UpstreamCallbackURL())
		d.provider.register(d.as.ConnectCallbackURL())
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
		d.Close()
		return nil, err
	}
	conn, err := demoConnector(d.rsID, d.rsSecret, d.issuer+"/token")
	if err != nil {
		d.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	d.verifier.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := demoMCPServer()
		if connect {
			addConnectTool(s, conn)
		}
		return s
	},
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	doc, err := clientmeta.NewHandler(clientmeta.HandlerConfig{Document: demoClientDocument(d.clientID)})
	if err != nil {
		d.Close()
		return nil, err
	}
	mux.Handle("GET "+demoClientDocPath+demoClientDocName, doc)
	d.asMux, d.mcpMux = d.as, mux
	if obs != nil {
		d.asMux = observe(d.as, obs.asRequest, obs.asResponse)
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
