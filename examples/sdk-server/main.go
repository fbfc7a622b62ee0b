// Command sdk-server is an MCP server built with the official Go SDK and
// protected by mcpauth's resource package, with a scope per tool:
// read_notes needs notes:read, add_note also needs notes:write.
//
//	go run ./cmd/mcpauth authserver --consent auto --insecure-http --scopes "notes:read notes:write"
//	go run ./examples/sdk-server
//	go run ./cmd/mcpauth call --insecure-http --browser http http://127.0.0.1:8080/mcp add_note --args '{"text":"hi"}'
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/resource"
)

// newHandler is the whole integration: an SDK server, a Verifier for this
// resource and issuer, and Mount.
func newHandler(resourceURL, issuer string) (http.Handler, *resource.Verifier, error) {
	v, err := resource.New(resource.Config{
		Resource:        resourceURL,
		Issuers:         []resource.Issuer{{Issuer: issuer}},
		ScopesSupported: []string{"notes:read", "notes:write"},
		Policy: &resource.Policy{Default: []string{"notes:read"},
			Tools: map[string][]string{"add_note": {"notes:write"}}},
		InsecureAllowHTTPLoopback: true, // plain http on 127.0.0.1 for the example; remove in production
	})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	n := &notes{}
	v.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return notesServer(n) },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	return mux, v, nil
}

// notes is the example's state, shared by every request.
type notes struct {
	mu   sync.Mutex
	list []string
}

type addArgs struct {
	Text string `json:"text" jsonschema:"the note"`
}

func notesServer(n *notes) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_notes", Description: "List the notes (notes:read)."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			return text(strings.Join(n.list, "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Add a note (notes:write)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.list = append(n.list, in.Text)
			return text(fmt.Sprintf("%d notes", len(n.list))), nil, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	issuer := flag.String("issuer", "http://127.0.0.1:9000", "the authorization server (mcpauth authserver)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, *issuer, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// serve runs the server on addr until ctx ends.
func serve(ctx context.Context, addr, issuer string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h, v, err := newHandler("http://"+ln.Addr().String()+"/mcp", issuer)
	if err != nil {
		ln.Close()
		return err
	}
	defer v.Close()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "listening on http://%s/mcp (issuer %s)\n", ln.Addr(), issuer)
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.WithoutCancel(ctx)) }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
