package selfcheck_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
)

// TestGoSDKServerAcceptsRequests: the requests the check sends are valid
// 2026-07-28 requests for the official Go SDK, both as JSON and as an event
// stream, so "valid token accepted" (RS-20) measures authorization and not
// request syntax.
func TestGoSDKServerAcceptsRequests(t *testing.T) {
	t.Parallel()
	for _, jsonResponse := range []bool{true, false} {
		server := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
		type in struct {
			Message string `json:"message"`
		}
		mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message}}}, nil, nil
		})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonResponse})
		f := newFake(fakeOpts{next: h})
		rep := run(t, config(t, f, validToken, adminTool))
		f.Close()
		for _, res := range rep.Results {
			if res.ID == "RS-20" && res.Status != selfcheck.StatusPass {
				t.Errorf("JSONResponse=%v: %s %s: %s", jsonResponse, res.ID, res.Status, res.Detail)
			}
		}
	}
}
