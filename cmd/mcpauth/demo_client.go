package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
)

// runNarratedClient is the scripted MCP host of the demo: mcpauth's client
// library plugged into the official Go SDK client, driven headlessly,
// with every step told by n.
func runNarratedClient(ctx context.Context, n *narrator, d *demoStack, consent authserver.ConsentMode) error {
	var inner client.Authorizer = demoAuthorizer{n: n, d: d}
	if consent == authserver.ConsentPrompt {
		inner = &client.Loopback{Open: func(ctx context.Context, authURL string) error {
			n.say("\n    Approve the request in your browser. If it did not open, visit:\n    %s", authURL)
			_ = client.OpenBrowser(ctx, authURL) // the printed URL is the fallback
			return nil
		}}
	}
	c, err := client.New(client.Config{
		Authorizer:                narratingAuthorizer{inner: inner, n: n},
		ClientIDMetadataURL:       d.clientID,
		ClientIDMetadata:          demoClientDocument(d.clientID),
		InsecureAllowHTTPLoopback: true,
		UserAgent:                 "mcpauth-demo",
		OnURLElicitation:          narrateURLElicitation(n, d),
	})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(d.mcpURL)
	if err != nil {
		return err
	}
	base := &http.Transport{ResponseHeaderTimeout: 30 * time.Second, MaxIdleConnsPerHost: 2}
	defer base.CloseIdleConnections()
	hc := h.HTTPClient(&observingTransport{base: base, n: n})
	hc.Timeout = time.Minute

	n.say("\nThe MCP host (mcpauth's client library inside the official Go SDK client) connects to %s.", d.mcpURL)
	n.say("It has no token and no registration yet; it knows only the URL.")
	elicit, err := c.ElicitationHandler(d.mcpURL)
	if err != nil {
		return err
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "mcpauth-demo-client", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: elicit,
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.mcpURL, OAuthHandler: h, HTTPClient: hc,
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	n.say("    Connected.")

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	names := make([]string, 0, len(tools.Tools))
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	n.say("    Tools: %s", strings.Join(names, ", "))

	for _, call := range []struct{ intro, tool, message string }{
		{"\nNow the tool calls. echo needs mcp:tools, which the token has:", "echo", "hello from the demo"},
		{"\nwhoami shows what the server validated (the tool sees claims, never the token):", "whoami", ""},
		{"\nadmin_echo needs mcp:admin, which the token lacks:", "admin_echo", "step-up works"},
		{"\nlist_repos needs your account at a third-party provider, " + demoProvider + ". The MCP server asks the authorization server\n" +
			"for it by token exchange (RFC 8693, audience=" + demoProvider + "); the account is not connected yet.", "list_repos", ""},
	} {
		n.say("%s", call.intro)
		var args any = map[string]any{}
		if call.message != "" {
			args = map[string]any{"message": call.message}
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: call.tool, Arguments: args})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", call.tool, err)
		}
		if res.IsError {
			return fmt.Errorf("tools/call %s: the tool failed: %s", call.tool, resultText(res))
		}
		n.say("    %s result: %s", call.tool, resultText(res))
	}
	return nil
}

// resultText renders a tool result for people: structured content as
// JSON, else the text contents.
func resultText(res *mcp.CallToolResult) string {
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
