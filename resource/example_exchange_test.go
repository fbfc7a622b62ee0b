package resource_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/mcpauth/mcpauth/resource"
)

// An MCP tool calls an upstream API (here GitHub's) as the logged-in user:
// the Exchanger trades the request's verified MCP access token, which the
// handler never sees, for the user's upstream token at the authorization
// server, which keeps it (the upstream.VaultConfig of authserver/upstream).
func ExampleExchanger() {
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com", JWKSURI: "https://auth.example.com/jwks"}},
	})
	if err != nil {
		panic(err)
	}
	ex, err := resource.NewExchanger(resource.ExchangeConfig{
		TokenEndpoint: "https://auth.example.com/token",
		ClientID:      "mcp-server", ClientSecret: "from-a-secret-store",
		HTTPClient: &http.Client{Timeout: 5 * time.Second},
		CacheSize:  1000,
	})
	if err != nil {
		panic(err)
	}
	api := &http.Client{Timeout: 10 * time.Second}
	tool := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gh, err := ex.Exchange(r.Context(), "github")
		if err != nil {
			http.Error(w, "log in again", http.StatusUnauthorized)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "https://api.github.com/user", nil)
		req.Header.Set("Authorization", gh.TokenType+" "+gh.AccessToken)
		resp, err := api.Do(req)
		if err != nil {
			http.Error(w, "upstream unavailable", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		fmt.Fprintln(w, "GitHub says", resp.Status)
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", v.Middleware(tool))
	_ = &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// An MCP tool calls a downstream API (here a calendar) with a token of its
// own: the authorization server issues it for that API alone
// (authserver.DownstreamAPI), acting for the user, in exchange for the
// request's verified MCP access token, which neither the handler nor the
// API ever sees. The API verifies it with its own resource.Verifier,
// whose Resource is the API's URI.
func ExampleExchanger_ExchangeResource() {
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com"}},
	})
	if err != nil {
		panic(err)
	}
	ex, err := resource.NewExchanger(resource.ExchangeConfig{
		TokenEndpoint: "https://auth.example.com/token",
		ClientID:      "mcp-server", ClientSecret: "from-a-secret-store",
		CacheSize: 1000,
	})
	if err != nil {
		panic(err)
	}
	api := &http.Client{Timeout: 10 * time.Second}
	tool := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cal, err := ex.ExchangeResource(r.Context(), "https://calendar.example.com/api", "calendar:read")
		if err != nil {
			v.DenyExchange(w, r, err)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "https://calendar.example.com/api/events", nil)
		req.Header.Set("Authorization", cal.TokenType+" "+cal.AccessToken)
		resp, err := api.Do(req)
		if err != nil {
			http.Error(w, "calendar unavailable", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		fmt.Fprintln(w, "the calendar says", resp.Status)
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", v.Middleware(tool))
	_ = &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
