// Command conformance-client is the client under test for the official MCP
// conformance suite (@modelcontextprotocol/conformance, client mode). It is
// built only on the public API of package client and the official Go MCP
// SDK: the SDK speaks MCP (2026-07-28 stateless with server/discover, or
// 2025-11-25 with initialize), package client authorizes it through
// client.OAuthHandler.
//
// The suite's contract: the MCP server URL is the last argument; the
// environment carries MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION
// and, for some scenarios, MCP_CONFORMANCE_CONTEXT (JSON; pre-registered
// client_id, client_secret and issuer). The suite's mock authorization
// servers approve at once with a 302, so the client follows the
// authorization URL over HTTP (client.FollowRedirects). The mocks listen on
// http://localhost, which is why this program, and only this program,
// turns on the insecure loopback switch; it also turns on the 2025-03-26
// discovery fallbacks the back-compat scenarios exercise.
//
// After authorization the program does what each scenario's referee
// watches for (the auth scenarios call "test-tool"; the protocol scenarios
// of the 2026-07-28 requirement set exercise headers, elicitation and
// schemas through the SDK). The exit status is 0 when the MCP session
// worked and 1 otherwise; the suite expects a failure in the scenarios
// where the client must refuse.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
)

// cimdURL is the Client ID Metadata Document URL the suite expects.
const cimdURL = "https://conformance-test.local/client-metadata.json"

// scenarioContext is MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	ClientID     string     `json:"client_id"`
	ClientSecret string     `json:"client_secret"`
	Issuer       string     `json:"issuer"`
	ToolCalls    []toolCall `json:"toolCalls"`

	// auth/client-credentials-jwt
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	// auth/enterprise-managed-authorization
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	// auth/wif-jwt-bearer: the workload token the platform would hand out
	// (the context also carries wrong-audience and expired variants, which a
	// real platform never issues for this audience).
	ValidJWT string `json:"valid_jwt"`
}

// toolCall is one call the http-custom-headers scenario asks for.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := run(log, os.Args[1:]); err != nil {
		log.Error("conformance client failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: conformance-client [args...] <mcp-server-url>")
	}
	serverURL := args[len(args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	version := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")
	if version == "" {
		version = "2026-07-28"
	}
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	log.Info("starting", "scenario", scenario, "protocol_version", version, "server", serverURL)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	c, err := client.New(config(log, scenario, sc))
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	handler, err := c.OAuthHandler(serverURL)
	if err != nil {
		return err
	}
	hc := handler.HTTPClient(nil) // presents DPoP-bound tokens with their proofs
	hc.Timeout = 20 * time.Second
	transport := &mcp.StreamableClientTransport{
		Endpoint:             serverURL,
		OAuthHandler:         handler,
		HTTPClient:           hc,
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	impl := &mcp.Implementation{Name: "mcpauth-conformance-client", Version: "0.1.0"}
	session, err := mcp.NewClient(impl, clientOptions(scenario)).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	return exercise(ctx, log, session, scenario, sc)
}

// clientOptions declares elicitation for the scenario that needs it.
func clientOptions(scenario string) *mcp.ClientOptions {
	if scenario != "sep-2322-client-request-state" {
		return nil
	}
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		},
	}
}

// config is the client configuration for the suite's mocks.
func config(log *slog.Logger, scenario string, sc scenarioContext) client.Config {
	cfg := client.Config{
		Authorizer:                &client.FollowRedirects{},
		ClientIDMetadataURL:       cimdURL,
		ClientName:                "mcpauth conformance client",
		InsecureAllowHTTPLoopback: true,                 // the mocks are http://localhost
		InsecureLegacy20250326:    true,                 // auth/2025-03-26-* scenarios
		DPoP:                      &client.DPoPConfig{}, // auth/dpop, auth/dpop-nonce: a key per login, ES256 when the servers accept it
		Logger:                    log,
	}
	if sc.ClientID != "" && sc.Issuer != "" {
		cfg.PreRegistered = []client.PreRegisteredClient{{
			Issuer: sc.Issuer, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret,
		}}
	}
	cfg.Grant = grant(scenario, sc)
	return cfg
}

// grant is the machine grant of the extension scenarios, nil for the
// interactive ones. The mocks do not say which authorization server the
// credentials belong to, so they are offered to the one discovery finds.
func grant(scenario string, sc scenarioContext) client.Grant {
	switch scenario {
	case "auth/client-credentials-basic":
		return &client.ClientCredentials{
			Credentials:       client.Credentials{ClientID: sc.ClientID, ClientSecret: sc.ClientSecret},
			InsecureAnyIssuer: true,
		}
	case "auth/client-credentials-jwt":
		return &client.ClientCredentials{Credentials: client.Credentials{
			ClientID: sc.ClientID, PrivateKeyPEM: []byte(sc.PrivateKeyPEM), Algorithm: sc.SigningAlgorithm,
		}}
	case "auth/enterprise-managed-authorization":
		return &client.EnterpriseAuthorization{
			IdPTokenEndpoint:  sc.IdPTokenEndpoint,
			IdPCredentials:    client.Credentials{ClientID: sc.IdPClientID},
			IDToken:           func(context.Context) (string, error) { return sc.IdPIDToken, nil },
			Credentials:       client.Credentials{ClientID: sc.ClientID, ClientSecret: sc.ClientSecret},
			InsecureAnyIssuer: true,
		}
	case "auth/wif-jwt-bearer":
		return &client.WorkloadIdentity{
			Assertion:   func(context.Context, string) (string, error) { return sc.ValidJWT, nil },
			Credentials: client.Credentials{ClientID: sc.ClientID},
		}
	}
	return nil
}

// exercise does what the scenario's referee checks after authorization.
func exercise(ctx context.Context, log *slog.Logger, session *mcp.ClientSession, scenario string, sc scenarioContext) error {
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var calls []toolCall
	lenient := true // the protocol scenarios expect some calls to be refused
	switch scenario {
	case "tools_call":
		calls, lenient = []toolCall{{Name: "add_numbers", Arguments: map[string]any{"a": 5, "b": 3}}}, false
	case "http-custom-headers":
		calls = sc.ToolCalls
	case "http-invalid-tool-headers":
		for _, t := range tools.Tools {
			calls = append(calls, toolCall{Name: t.Name, Arguments: map[string]any{"region": "us-west1"}})
		}
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			calls = append(calls, toolCall{Name: name})
		}
	case "json-schema-2020-12-preservation":
		for _, t := range tools.Tools {
			if t.Name == "json_schema_2020_12_tool" {
				calls = append(calls, toolCall{Name: "json_schema_echo", Arguments: map[string]any{"schema": t.InputSchema}})
			}
		}
	case "http-standard-headers":
		standardHeaders(ctx, session, tools)
		return nil
	default: // the auth scenarios
		calls, lenient = []toolCall{{Name: "test-tool"}}, false
	}
	for _, call := range calls {
		if !lenient && !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == call.Name }) {
			log.Info("no tool to call", "tool", call.Name)
			continue
		}
		if call.Arguments == nil {
			call.Arguments = map[string]any{}
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: call.Name, Arguments: call.Arguments})
		switch {
		case err != nil && lenient:
			log.Info("tool call refused", "tool", call.Name, "error", err)
		case err != nil:
			return fmt.Errorf("tools/call %s: %w", call.Name, err)
		case res.IsError && !lenient:
			return fmt.Errorf("tools/call %s: tool error", call.Name)
		}
	}
	log.Info("done", "calls", len(calls))
	return nil
}

// standardHeaders calls one tool, reads one resource and gets one prompt,
// so every request kind carries the SEP-2243 headers.
func standardHeaders(ctx context.Context, session *mcp.ClientSession, tools *mcp.ListToolsResult) {
	if len(tools.Tools) > 0 {
		_, _ = session.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{}})
	}
	if res, err := session.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
		_, _ = session.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
	}
	if prompts, err := session.ListPrompts(ctx, nil); err == nil && len(prompts.Prompts) > 0 {
		_, _ = session.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompts.Prompts[0].Name, Arguments: map[string]string{}})
	}
}
