// Command upstream-token is an MCP server whose tool calls GitHub's API as
// the logged-in user, without ever handling that user's GitHub token at
// login and without forwarding the MCP access token. The user logs in
// through `mcpauth authserver --upstream github`, which keeps the GitHub
// token in its vault; the tool trades the request's verified MCP access
// token for it with an RFC 8693 token exchange (resource.Exchanger) and
// sends it to the GitHub API only.
//
// Run it behind an authorization server that brokers GitHub logins (see
// README.md), then call its tool with any MCP client:
//
//	MCP_SERVER_SECRET=… go run ./examples/upstream-token --insecure-http
//	mcpauth call --insecure-http http://127.0.0.1:8090/mcp github_user
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/resource"
)

// config is what the server needs; main fills it from flags.
type config struct {
	// Resource is this server's URL, the audience of its MCP tokens.
	Resource string
	// Issuer is the authorization server; its token endpoint TokenURL.
	Issuer   resource.Issuer
	TokenURL string
	// ClientID and ClientSecret: this server at the authorization server,
	// allowed the token exchange (--exchange-client ID=RESOURCE).
	ClientID, ClientSecret string
	// Audience names the upstream provider in the exchange ("github").
	Audience string
	// API is the upstream API's base URL (https://api.github.com).
	API string
	// InsecureHTTP allows plain-http loopback URLs, for local runs.
	InsecureHTTP bool
}

func main() {
	var c config
	addr := flag.String("addr", "127.0.0.1:8090", "listen address; the resource is http://ADDR/mcp")
	issuer := flag.String("issuer", "http://127.0.0.1:9000", "the authorization server (mcpauth authserver --upstream github)")
	flag.StringVar(&c.ClientID, "client-id", "mcp-server", "this server's client ID at the authorization server; the secret is $MCP_SERVER_SECRET")
	flag.StringVar(&c.Audience, "audience", "github", "the exchange's audience for the upstream token (authserver --upstream-audience)")
	flag.StringVar(&c.API, "api", "https://api.github.com", "the upstream API")
	flag.BoolVar(&c.InsecureHTTP, "insecure-http", false, "allow plain-http loopback URLs (local runs)")
	flag.Parse()
	c.Resource = "http://" + *addr + "/mcp"
	c.Issuer = resource.Issuer{Issuer: *issuer}
	c.TokenURL = strings.TrimSuffix(*issuer, "/") + "/token"
	c.ClientSecret = os.Getenv("MCP_SERVER_SECRET")
	h, closeAll, err := newHandler(c)
	if err != nil {
		log.Fatal(err)
	}
	defer closeAll()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Printf("MCP server at %s (tool github_user)", c.Resource)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// newHandler returns the MCP endpoint behind the resource middleware (and
// its RFC 9728 metadata), and a function that releases the verifier.
func newHandler(c config) (http.Handler, func(), error) {
	v, err := resource.New(resource.Config{
		Resource: c.Resource, Issuers: []resource.Issuer{c.Issuer},
		ScopesSupported: []string{"mcp:read"}, Policy: &resource.Policy{Default: []string{"mcp:read"}},
		InsecureAllowHTTPLoopback: c.InsecureHTTP,
	})
	if err != nil {
		return nil, nil, err
	}
	ex, err := resource.NewExchanger(resource.ExchangeConfig{
		TokenEndpoint: c.TokenURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
		CacheSize:  1000, CacheTTL: time.Minute,
		InsecureAllowHTTPLoopback: c.InsecureHTTP,
	})
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	api := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream-token", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "github_user", Description: "Who am I at GitHub? Asks GET /user as the logged-in user."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return githubUser(ctx, ex, api, c)
		})
	mux := http.NewServeMux()
	// Stateless: each tool call runs with its own request's context, so
	// the exchange uses the token of the call being served.
	v.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	return mux, func() { v.Close() }, nil
}

// githubUser is the tool: exchange, then GET /user with the upstream token.
func githubUser(ctx context.Context, ex *resource.Exchanger, api *http.Client, c config) (*mcp.CallToolResult, any, error) {
	gh, err := ex.Exchange(ctx, c.Audience)
	if err != nil {
		// 401: the grant was revoked or holds no GitHub token; log in again.
		// 503: the authorization server is unreachable. 502: misconfigured.
		return nil, nil, fmt.Errorf("no GitHub token for this user (%d): log in again or retry later", resource.ExchangeStatus(err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.API, "/")+"/user", nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", gh.TokenType+" "+gh.AccessToken) // to the API's origin only
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := api.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("GitHub API unreachable")
	}
	defer resp.Body.Close()
	var u struct {
		Login string `json:"login"`
		ID    int64  `json:"id"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&u) != nil {
		return nil, nil, fmt.Errorf("GitHub API answered %s", resp.Status)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s (id %d)", u.Login, u.ID)}}}, nil, nil
}
