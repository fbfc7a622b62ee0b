// Command sdk-client is an MCP host built with the official Go SDK whose
// OAuth is mcpauth's client package: on the server's 401 it discovers the
// authorization server, registers, and opens your browser (the RFC 8252
// loopback flow: a one-shot listener on 127.0.0.1 receives the redirect).
//
//	go run ./cmd/mcpauth demo --no-client --consent consent &
//	go run ./examples/sdk-client -url http://127.0.0.1:8080/mcp
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
)

func main() {
	serverURL := flag.String("url", "http://127.0.0.1:8080/mcp", "the MCP server")
	store := flag.String("store", "", "keep tokens in this file (default: memory, log in every run)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := client.Config{
		Authorizer:                &client.Loopback{Open: openBrowser(os.Stderr)},
		InsecureAllowHTTPLoopback: true, // the demo servers speak http on 127.0.0.1; remove in production
	}
	if *store != "" {
		s, err := tokenstore.NewFile(*store)
		if err != nil {
			log.Fatal(err)
		}
		cfg.Store = s
	}
	if err := run(ctx, cfg, *serverURL, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// openBrowser opens the system browser and prints the URL as a fallback.
func openBrowser(w io.Writer) func(context.Context, string) error {
	return func(ctx context.Context, authURL string) error {
		fmt.Fprintf(w, "Approve access in your browser; if it did not open, visit:\n  %s\n", authURL)
		_ = client.OpenBrowser(ctx, authURL)
		return nil
	}
}

// run connects with the client's OAuth handler, lists the tools and calls
// echo, printing what it gets.
func run(ctx context.Context, cfg client.Config, serverURL string, out io.Writer) error {
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(serverURL)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // includes the time to approve
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "sdk-client-example", Version: "1.0.0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: serverURL, OAuthHandler: h, HTTPClient: &http.Client{}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return err
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range tools.Tools {
		fmt.Fprintf(out, "tool %s: %s\n", t.Name, t.Description)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
	if err != nil {
		return err
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Fprintf(out, "echo: %s\n", t.Text)
		}
	}
	return nil
}
