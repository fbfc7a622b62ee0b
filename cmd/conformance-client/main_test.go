package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name      string
		scenario  string
		sc        scenarioContext
		wantPre   bool
		wantGrant bool
	}{
		{"no context", "auth/metadata-default", scenarioContext{}, false, false},
		{"pre-registration with issuer", "auth/pre-registration", scenarioContext{ClientID: "pre-registered-client", ClientSecret: "s", Issuer: "http://localhost:1"}, true, false},
		{"client without issuer is not bound to anything", "auth/metadata-default", scenarioContext{ClientID: "c", ClientSecret: "s"}, false, false},
		{"client credentials basic", "auth/client-credentials-basic", scenarioContext{ClientID: "c", ClientSecret: "s"}, false, true},
		{"client credentials jwt", "auth/client-credentials-jwt", scenarioContext{ClientID: "c", SigningAlgorithm: "ES256"}, false, true},
		{"enterprise-managed authorization", "auth/enterprise-managed-authorization", scenarioContext{ClientID: "c", ClientSecret: "s"}, false, true},
		{"workload identity", "auth/wif-jwt-bearer", scenarioContext{ClientID: "c", ValidJWT: "a.b.c"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(log, tt.scenario, tt.sc)
			if got := cfg.Grant != nil; got != tt.wantGrant {
				t.Errorf("grant = %v, want %v", got, tt.wantGrant)
			}
			if cfg.DPoP == nil {
				t.Error("DPoP is off")
			}
			if cfg.ClientIDMetadataURL != "https://conformance-test.local/client-metadata.json" {
				t.Errorf("CIMD URL = %q", cfg.ClientIDMetadataURL)
			}
			if !cfg.InsecureAllowHTTPLoopback || !cfg.InsecureLegacy20250326 {
				t.Error("the suite's mocks need the loopback and 2025-03-26 switches")
			}
			if got := len(cfg.PreRegistered) == 1; got != tt.wantPre {
				t.Errorf("pre-registered = %v, want %v", got, tt.wantPre)
			}
			if tt.wantPre && (cfg.PreRegistered[0].Issuer != tt.sc.Issuer || cfg.PreRegistered[0].ClientSecret != tt.sc.ClientSecret) {
				t.Errorf("pre-registered = %+v", cfg.PreRegistered[0])
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	if err := run(slog.New(slog.DiscardHandler), nil); err == nil {
		t.Fatal("no server URL accepted")
	}
}

// TestRunProtocolVersions runs the program against an MCP server without
// authorization, for both protocol revisions the suite uses: the SDK
// speaks the one asked for and the scenario's tool is called.
func TestRunProtocolVersions(t *testing.T) {
	var calls atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "test-tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer ts.Close()
	for _, pv := range []string{"2026-07-28", "2025-11-25"} {
		t.Setenv("MCP_CONFORMANCE_PROTOCOL_VERSION", pv)
		t.Setenv("MCP_CONFORMANCE_SCENARIO", "auth/metadata-default")
		t.Setenv("MCP_CONFORMANCE_CONTEXT", `{"name":"x"}`)
		if err := run(slog.New(slog.NewTextHandler(io.Discard, nil)), []string{ts.URL + "/mcp"}); err != nil {
			t.Fatalf("%s: %v", pv, err)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("tool calls = %d, want 2", calls.Load())
	}
	t.Setenv("MCP_CONFORMANCE_CONTEXT", `not json`)
	if err := run(slog.New(slog.DiscardHandler), []string{ts.URL + "/mcp"}); err == nil {
		t.Error("malformed context accepted")
	}
}
