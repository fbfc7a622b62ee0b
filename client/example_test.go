package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// protectedServer starts, on 127.0.0.1, an MCP server protected by an
// auto-approving authorization server, and returns the MCP endpoint URL.
func protectedServer(c *oauthtest.Cleanup) string {
	as := oauthtest.NewAS(c, oauthtest.ASOptions{ScopesSupported: []string{"files:read", "offline_access"}, IssueRefreshTokens: true})
	return oauthtest.NewResource(c, oauthtest.ResourceOptions{ChallengeScope: []string{"files:read"}}, as).MCPURL()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A go-sdk client connecting to a protected MCP server: the 401 leads to
// discovery, registration, authorization and the token, all inside the
// transport.
func ExampleClient_OAuthHandler() {
	servers := &oauthtest.Cleanup{}
	defer servers.Close()
	serverURL := protectedServer(servers) // e.g. "https://mcp.example.com/mcp"
	ctx := context.Background()

	c := must(client.New(client.Config{
		Authorizer:                &client.FollowRedirects{}, // an interactive host uses &client.Loopback{}
		InsecureAllowHTTPLoopback: true,                      // only because these servers run on 127.0.0.1
	}))
	handler := must(c.OAuthHandler(serverURL))
	transport := &mcp.StreamableClientTransport{Endpoint: serverURL, OAuthHandler: handler}
	session := must(mcp.NewClient(&mcp.Implementation{Name: "example-host"}, nil).Connect(ctx, transport, nil))
	defer session.Close()
	res := must(session.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}))
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: ok
}

// The same client as an http.RoundTripper, for any HTTP code.
func ExampleClient_Transport() {
	servers := &oauthtest.Cleanup{}
	defer servers.Close()
	serverURL := protectedServer(servers)

	c := must(client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true}))
	tr := must(c.Transport(serverURL, nil))
	req := must(http.NewRequest(http.MethodPost, serverURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp := must(tr.HTTPClient().Do(req))
	defer resp.Body.Close()
	body := must(io.ReadAll(resp.Body))
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"echo"`))
	// Output: 200 true
}

// x/oauth2 code gets its tokens from the Client: oauth2.NewClient sends
// them as Bearer tokens; the first Token call authorizes.
func ExampleClient_TokenSource() {
	servers := &oauthtest.Cleanup{}
	defer servers.Close()
	serverURL := protectedServer(servers)
	ctx := context.Background()

	c := must(client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true}))
	hc := oauth2.NewClient(ctx, c.TokenSource(ctx, serverURL))
	req := must(http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp := must(hc.Do(req))
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 200
}

// A CLI host: a browser and a loopback listener for the login, a Client ID
// Metadata Document as identity, tokens kept in a file across runs.
func ExampleNew() {
	dir := must(os.MkdirTemp("", "mcp-host"))
	defer os.RemoveAll(dir)
	store := must(tokenstore.NewFile(filepath.Join(dir, "tokens.json")))

	c, err := client.New(client.Config{
		Authorizer:          &client.Loopback{}, // opens the system browser
		ClientIDMetadataURL: "https://app.example.com/oauth/client.json",
		Store:               store,
	})
	fmt.Println(c != nil, err)

	_, err = client.New(client.Config{Authorizer: &client.Loopback{}, ClientIDMetadataURL: "http://app.example.com/client.json"})
	fmt.Println(err != nil) // CIMD-12: a client_id URL must be https with a path
	// Output:
	// true <nil>
	// true
}

// Login before the first request, for example from a "login" command.
func ExampleClient_Login() {
	servers := &oauthtest.Cleanup{}
	defer servers.Close()
	serverURL := protectedServer(servers)

	c := must(client.New(client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true}))
	fmt.Println(c.Login(context.Background(), serverURL))
	fmt.Println(c.Logout(context.Background(), serverURL))
	// Output:
	// <nil>
	// <nil>
}

// Loopback prints the URL instead of opening a browser with PrintURL, for
// example over SSH with a forwarded port.
func ExampleLoopback() {
	_ = &client.Loopback{
		Port: 8976, // fixed, so it can be forwarded; 0 picks a free one
		Open: client.PrintURL(os.Stderr),
	}
}

// Paste serves a terminal on another machine than the browser: the user
// pastes back the address the browser ended up at.
func ExamplePaste() {
	_ = &client.Paste{Out: os.Stderr, In: os.Stdin}
}

// OpenBrowser refuses anything but https (CL-22) before starting a
// program, and never uses a shell.
func ExampleOpenBrowser() {
	err := client.OpenBrowser(context.Background(), "javascript:alert(1)")
	fmt.Println(err)
	// Output: client: unsafe URL: only https URLs are opened
}

// SelectAuthServer restricts the authorization servers a host will use.
func ExampleAuthServerSelector() {
	allow := map[string]bool{"https://login.example.com": true}
	_ = client.Config{
		Authorizer: &client.Loopback{},
		SelectAuthServer: func(_ context.Context, _ string, issuers []string) ([]string, error) {
			var out []string
			for _, iss := range issuers {
				if allow[iss] {
					out = append(out, iss)
				}
			}
			return out, nil
		},
	}
}

// A host branches on the error class and logs the reason: here an MCP
// server URL that is plain http to a public host, refused before any
// request.
func ExampleError() {
	c := must(client.New(client.Config{Authorizer: &client.FollowRedirects{}}))
	_, err := c.Transport("http://mcp.example.com/mcp", nil)
	var ce *client.Error
	switch {
	case errors.Is(err, client.ErrConfig):
		fmt.Println("fix the program:", err)
	case errors.Is(err, client.ErrDiscovery) && errors.As(err, &ce):
		fmt.Println("this server cannot be used:", ce.Reason)
	case errors.Is(err, client.ErrAuthorization):
		fmt.Println("the login did not complete; try again")
	case errors.Is(err, client.ErrTokenRequest):
		fmt.Println("the authorization server refused:", err)
	}
	// Output: this server cannot be used: unsafe URL
}

// Log in where no browser can reach a loopback redirect (SSH, a
// container, CI): the device flow prints the code and the URL to stderr,
// and the user approves on another device.
func ExamplePrintDeviceCode() {
	show := client.PrintDeviceCode(os.Stdout) // os.Stderr in a real host
	_ = show(context.Background(), &client.DevicePrompt{
		Resource: "https://mcp.example.com/mcp", UserCode: "BCDF-GHJK",
		VerificationURI: "https://as.example.com/device",
		Expires:         time.Date(2026, 7, 28, 12, 10, 0, 0, time.UTC),
	})
	c, err := client.New(client.Config{Device: &client.DeviceFlow{Show: client.PrintDeviceCode(os.Stderr)}})
	fmt.Println(c != nil, err)
	// Output:
	// To authorize access to https://mcp.example.com/mcp, open
	//
	//   https://as.example.com/device
	//
	// and enter the code
	//
	//   BCDF-GHJK
	//
	// The code expires at 12:10PM.
	// true <nil>
}
