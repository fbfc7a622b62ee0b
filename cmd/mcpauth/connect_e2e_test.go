//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// TestE2EConnectTypeScriptSDK: the official TypeScript SDK v2 client, an
// independent host, completes a third-party connect over URL-mode
// elicitation (2026-07-28): protect --connect-tool in front of a Go SDK
// server answers the first call with the connect page of an authorization
// server honouring the connect contract (oauthtest.Connections), the host
// accepts and retries with the requestState, and the tool runs with the
// provider token, which the host never sees.
func TestE2EConnectTypeScriptSDK(t *testing.T) {
	t.Parallel()
	needInteropTools(t, "@modelcontextprotocol/client")
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	conns := &oauthtest.Connections{ClientID: "rs", Secret: "rs-secret"}
	asMux := http.NewServeMux()
	asMux.HandleFunc("POST /token", conns.Handler)
	asMux.HandleFunc("POST /test/connect-alice", func(w http.ResponseWriter, _ *http.Request) { conns.Connect("alice", "github") })
	as := httptest.NewServer(asMux)
	t.Cleanup(as.Close)
	conns.Base = as.URL

	server := mcp.NewServer(&mcp.Implementation{Name: "repos", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "list_repos"}, func(_ context.Context, req *mcp.CallToolRequest, in struct {
		Org string `json:"org"`
	}) (*mcp.CallToolResult, any, error) {
		ok := req.Extra.Header.Get("X-Provider-Token") == oauthtest.ProviderToken("alice", "github")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "repos of " + in.Org + map[bool]string{true: " with the GitHub token", false: " WITHOUT the token"}[ok]}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL + "/mcp")

	srv := httptest.NewUnstartedServer(nil)
	res := "http://" + srv.Listener.Addr().String() + "/mcp"
	logger := slog.New(slog.DiscardHandler)
	getenv := func(string) string { return "rs-secret" }
	cf := protectConnectFlags{tools: listFlag{"list_repos=github"}, header: "X-Provider-Token"}
	gate, err := cf.config(&passUpstreamFlags{tokenURL: as.URL + "/token", clientID: "rs", clientSecret: "env:RS", forConnect: true},
		[]string{as.URL}, true, getenv, logger, randomKey(), newConnectReplay(t))
	if err != nil {
		t.Fatal(err)
	}
	h, v, err := protectHandlerWith(resource.Config{Resource: res, InsecureAllowHTTPLoopback: true,
		Issuers: []resource.Issuer{{Issuer: as.URL, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}}}, upURL, nil, gate, nil, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	tok := key.Mint(t, oauthtest.AccessToken{Issuer: as.URL, Subject: "alice", Audience: []string{res}, ClientID: "ts-host",
		Scope: "mcp:tools", IssuedAt: time.Now(), Expiry: time.Now().Add(time.Hour)})
	conns.Subject(tok, "alice")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, interopNode, "connect.mjs", res, tok, as.URL+"/test/connect-alice")
	cmd.Dir = interopDir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("connect.mjs: %v\n%s", err, stderrOf(err))
	}
	var report struct {
		Elicitations []map[string]string `json:"elicitations"`
		Text         string              `json:"text"`
		IsError      bool                `json:"isError"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if len(report.Elicitations) != 1 || report.Elicitations[0]["mode"] != "url" ||
		!strings.HasPrefix(report.Elicitations[0]["url"], as.URL+"/connect/github?ref=") || report.IsError ||
		report.Text != "repos of acme with the GitHub token" {
		t.Fatalf("report: %s", out)
	}
	if strings.Contains(string(out), "provider-secret") {
		t.Fatal("the host saw the provider token")
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
