// Command downstream-api shows an MCP tool that calls another API the right
// way: with its own token, obtained for that API, through mcpauth's client.
// A second tool tries the wrong way — forwarding the caller's token — and
// the resource package's passthrough guard refuses it before anything is
// sent (MCP Security Best Practices, "Token Passthrough"; RS-19).
//
// It runs everything in one process on 127.0.0.1 (an authorization server,
// the downstream "forecast" API, the MCP server and a client), prints one
// round and exits:
//
//	go run ./examples/downstream-api
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/resource"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// inboundKey is where the careless middleware below keeps the caller's
// Authorization header: the anti-pattern the guard exists for.
type inboundKey struct{}

// mcpServer is the MCP server with its two tools. forecastClient calls the
// downstream API with the server's own token; guarded is what a careless
// tool would use to forward the caller's token.
func mcpServer(forecastClient, guarded *http.Client, forecastURL string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: "Ask the forecast API, with this server's own token."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, forecastURL, nil)
			resp, err := forecastClient.Do(req)
			if err != nil {
				return nil, nil, err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			return text(fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "forward_my_token", Description: "The wrong way: forward the caller's token."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, forecastURL, nil)
			req.Header.Set("Authorization", ctx.Value(inboundKey{}).(string))
			resp, err := guarded.Do(req)
			var pe *resource.PassthroughError
			if errors.As(err, &pe) {
				return text("refused by the guard (" + pe.Where + "): " + err.Error()), nil, nil
			}
			if err == nil {
				resp.Body.Close()
			}
			return nil, nil, fmt.Errorf("the inbound token was not refused: %v", err)
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// servers holds what run starts, for Close.
type servers struct {
	closers []func()
}

func (s *servers) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// serve starts h on a fresh 127.0.0.1 listener and returns its base URL.
func (s *servers) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.closers = append(s.closers, func() { _ = srv.Close() })
}

func run(ctx context.Context, out io.Writer) error {
	s := &servers{}
	defer s.Close()
	as, err := authservertest.Start(authserver.Config{Consent: authserver.ConsentAuto, Scopes: []string{"mcp:tools", "forecast:read"}})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, as.Close)

	// The downstream API: a plain JSON API protected by its own Verifier,
	// accepting only tokens whose audience is the API itself.
	apiLn, _ := net.Listen("tcp", "127.0.0.1:0")
	forecastURL := "http://" + apiLn.Addr().String() + "/forecast"
	api, err := resource.New(resource.Config{Resource: forecastURL, Issuers: []resource.Issuer{{Issuer: as.Issuer()}},
		ScopesSupported: []string{"forecast:read"}, Policy: &resource.Policy{Default: []string{"forecast:read"}}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func() { api.Close() })
	apiMux := http.NewServeMux()
	api.Mount(apiMux, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"forecast": "sunny", "for": resource.TokenInfoFromContext(r.Context()).ClientID})
	}))
	s.serve(apiLn, apiMux)

	// The MCP server. Its outbound calls go through GuardTransport; the
	// forecast tool's client also gets its own token for the API.
	mcpLn, _ := net.Listen("tcp", "127.0.0.1:0")
	mcpURL := "http://" + mcpLn.Addr().String() + "/mcp"
	v, err := resource.New(resource.Config{Resource: mcpURL, Issuers: []resource.Issuer{{Issuer: as.Issuer()}},
		ScopesSupported: []string{"mcp:tools"}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func() { v.Close() })
	guard := v.GuardTransport(nil)
	own, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true, ClientName: "weather MCP server"})
	if err != nil {
		return err
	}
	ownTransport, err := own.Transport(forecastURL, guard)
	if err != nil {
		return err
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcpServer(&http.Client{Transport: ownTransport, Timeout: 20 * time.Second},
			&http.Client{Transport: guard, Timeout: 20 * time.Second}, forecastURL)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	v.Mount(mux, sdk)
	careless := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), inboundKey{}, r.Header.Get("Authorization"))))
	})
	s.serve(mcpLn, careless)
	return callTools(ctx, as.Issuer(), mcpURL, out)
}

// callTools is the MCP host: it logs in to the MCP server and calls both
// tools.
func callTools(ctx context.Context, issuer, mcpURL string, out io.Writer) error {
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(mcpURL)
	if err != nil {
		return err
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: h, HTTPClient: &http.Client{Timeout: 30 * time.Second},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer session.Close()
	fmt.Fprintf(out, "authorization server %s, MCP server %s\n", issuer, mcpURL)
	for _, tool := range []string{"forecast", "forward_my_token"} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("%s: %s", tool, res.Content[0].(*mcp.TextContent).Text)
		}
		fmt.Fprintf(out, "%s: %s\n", tool, res.Content[0].(*mcp.TextContent).Text)
	}
	return nil
}
