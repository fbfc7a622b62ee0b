package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
	"github.com/mcpauth/mcpauth/resource"
)

// A tool of a Go SDK server acts on GitHub as the user. The first call of
// a user who has not connected GitHub answers with a URL-mode elicitation
// to the authorization server's connect page and a sealed requestState
// (for a 2025-11-25 client, the -32042 error); the client retries once the
// user has connected, and the call proceeds. The GitHub token never
// reaches the client.
func ExampleConnector_ProviderToken() {
	v, _ := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com", JWKSURI: "https://auth.example.com/jwks"}},
	})
	ex, _ := resource.NewExchanger(resource.ExchangeConfig{TokenEndpoint: "https://auth.example.com/token",
		ClientID: "mcp-server", ClientSecret: os.Getenv("EXCHANGE_SECRET")})
	key, _ := requeststate.ParseKey(os.Getenv("REQUEST_STATE_KEY")) // 32 random bytes, shared by the replicas
	used, _ := replay.NewMemory(replay.MemoryConfig{})              // redisreplay across replicas
	states, _ := requeststate.New(requeststate.Config{Key: key, Replay: used})
	conn, err := resource.NewConnector(resource.ConnectConfig{Exchanger: ex, States: states})
	if err != nil {
		panic(err)
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "repos"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "list_repos"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Org string }) (*mcp.CallToolResult, any, error) {
		gh, err := conn.ProviderToken(ctx, "github", sdkCall(req))
		if res, rpcErr, ok := sdkConnectAnswer(err); ok {
			return res, nil, rpcErr
		}
		if err != nil {
			return nil, nil, err // an error result: the exchange failed, the user declined
		}
		_ = gh // call https://api.github.com with gh.AccessToken
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "..."}}}, nil, nil
	})
	http.Handle("/mcp", v.Middleware(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})))
}

// sdkCall describes a Go SDK tool call to the Connector.
func sdkCall(req *mcp.CallToolRequest) resource.Call {
	call := resource.Call{Name: req.Params.Name, Arguments: req.Params.Arguments, RequestState: req.Params.RequestState}
	if p := req.Session.InitializeParams(); p != nil {
		call.ProtocolVersion = p.ProtocolVersion
		call.URLElicitation = p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
	}
	if req.Params.InputResponses != nil {
		call.InputResponses, _ = json.Marshal(req.Params.InputResponses)
	}
	return call
}

// sdkConnectAnswer turns a Connector refusal into the Go SDK's answer: the
// InputRequiredResult, or a JSON-RPC error (-32042, -32021, or -32602 for
// a requestState that does not verify). ok is false for other errors.
func sdkConnectAnswer(err error) (res *mcp.CallToolResult, rpcErr error, ok bool) {
	var need *resource.ConnectRequired
	switch {
	case errors.As(err, &need) && !need.IsError():
		r := need.Result()
		res = &mcp.CallToolResult{RequestState: r.RequestState, InputRequests: mcp.InputRequestMap{}}
		for id, ir := range r.InputRequests {
			res.InputRequests[id] = &mcp.ElicitParams{Mode: ir.Params.Mode, Message: ir.Params.Message, URL: ir.Params.URL}
		}
		return res, nil, true
	case errors.As(err, &need):
		e := need.RPCError()
		return nil, &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}, true
	case errors.Is(err, requeststate.ErrRefused):
		return nil, &jsonrpc.Error{Code: resource.CodeInvalidParams, Message: "invalid requestState"}, true
	}
	return nil, nil, false
}
