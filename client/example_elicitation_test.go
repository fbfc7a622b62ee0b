package client_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
)

// A host lets an MCP server ask the user to open a URL (for example to
// connect a GitHub account): it shows the full URL with its host and the
// warnings, opens it only after consent, and tells the SDK when the user
// is done, which then retries the call with the server's requestState
// (2026-07-28) or sends it again (2025-11-25, the -32042 error).
func ExampleClient_ElicitationHandler() {
	const server = "https://mcp.example.com/mcp"
	c, err := client.New(client.Config{
		Authorizer: &client.Loopback{},
		OnURLElicitation: func(ctx context.Context, e client.URLElicitation) (bool, error) {
			fmt.Fprintf(os.Stderr, "%s asks you to open a page on %s:\n  %s\n  %s\n", e.Server, e.Host, e.Message, e.URL)
			for _, w := range e.Warnings {
				fmt.Fprintln(os.Stderr, "  warning:", w)
			}
			fmt.Fprint(os.Stderr, "Open it? [y/N] ")
			in := bufio.NewReader(os.Stdin)
			if line, _ := in.ReadString('\n'); strings.TrimSpace(line) != "y" {
				return false, nil
			}
			if err := client.OpenBrowser(ctx, e.URL); err != nil {
				return false, err
			}
			fmt.Fprint(os.Stderr, "Press Enter when you have finished in the browser. ")
			_, _ = in.ReadString('\n')
			return true, nil
		},
	})
	if err != nil {
		panic(err)
	}
	oauth, _ := c.OAuthHandler(server)
	elicit, _ := c.ElicitationHandler(server)
	legacy, _ := c.ElicitationMiddleware(server)
	sdk := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: elicit,
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	})
	sdk.AddSendingMiddleware(legacy)
	_, _ = sdk.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: server, OAuthHandler: oauth}, nil)
}
