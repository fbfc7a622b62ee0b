// Command in-process-as starts mcpauth's demo authorization server and an
// MCP server protected by the resource package inside one Go process, logs
// in with the client package and calls a tool: the pattern of main_test.go,
// which is the point of this example — an end-to-end OAuth test of your own
// MCP server that needs no external identity provider and no network beyond
// 127.0.0.1.
//
//	go run ./examples/in-process-as
//	go test ./examples/in-process-as
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/resource"
)

// stack is an authorization server and a protected MCP server on
// 127.0.0.1 httptest listeners.
type stack struct {
	AS       *authservertest.Server
	MCP      *httptest.Server
	URL      string // the MCP endpoint, also the token audience
	verifier *resource.Verifier
}

// start brings both servers up. The MCP server has one tool, greet, that
// needs the scope greet.
func start() (*stack, error) {
	as, err := authservertest.Start(authserver.Config{Consent: authserver.ConsentAuto, Scopes: []string{"greet"}})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(nil) // the listener exists, so its URL is known before the Verifier
	s := &stack{AS: as, MCP: srv, URL: "http://" + srv.Listener.Addr().String() + "/mcp"}
	s.verifier, err = resource.New(resource.Config{Resource: s.URL, Issuers: []resource.Issuer{{Issuer: as.Issuer()}},
		ScopesSupported: []string{"greet"}, Policy: &resource.Policy{Default: []string{"greet"}}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		as.Close()
		return nil, err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet the caller by the validated subject."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			who := resource.TokenInfoFromContext(ctx).Subject
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + who}}}, nil, nil
		})
	mux := http.NewServeMux()
	s.verifier.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	srv.Config.Handler = mux
	srv.Start()
	return s, nil
}

func (s *stack) Close() {
	s.MCP.Close()
	s.verifier.Close()
	s.AS.Close()
}

// greet logs in headlessly (the authorization server approves by itself)
// and calls the tool.
func greet(ctx context.Context, url string) (string, error) {
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		return "", err
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(url)
	if err != nil {
		return "", err
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1.0.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h, HTTPClient: &http.Client{Timeout: 20 * time.Second},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return "", err
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

func main() {
	s, err := start()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg, err := greet(ctx, s.URL)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "authorization server %s, MCP server %s: %s\n", s.AS.Issuer(), s.URL, msg)
}
