package bridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKParamHeaders: the Go SDK host and a 2026-07-28 go-sdk server
// through the bridge: a tool whose input schema marks an argument with
// x-mcp-header gets the Mcp-Param-* header (the server refuses the call
// without it), learnt from the tools/list answer.
func TestSDKParamHeaders(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"region": {Type: "string", Extra: map[string]any{"x-mcp-header": "Region"}},
		"limit":  {Type: "integer", Extra: map[string]any{"x-mcp-header": "Limit"}},
	}}
	type args struct {
		Region string `json:"region"`
		Limit  int    `json:"limit"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "where", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.Header.Get("Mcp-Param-Region") + "/" + req.Extra.Header.Get("Mcp-Param-Limit")}}}, nil, nil
	})
	var mu sync.Mutex
	var seen []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Mcp-Param-Region"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	b, err := New(Config{URL: srv.URL, Transport: http.DefaultTransport.(*http.Transport).Clone()})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- b.Run(context.Background(), inR, &checkedWriter{t: t, w: outW}); outW.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{"region": "eu west ", "limit": 5}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "=?base64?ZXUgd2VzdCA=?=/5" {
		t.Errorf("the tool saw %q", got)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[len(seen)-1] != "=?base64?ZXUgd2VzdCA=?=" {
		t.Errorf("headers %q", seen)
	}
}
