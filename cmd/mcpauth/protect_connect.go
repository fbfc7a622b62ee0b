package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
	"github.com/mcpauth/mcpauth/resource"
)

const connectProtectDescription = `
With --connect-tool TOOL=PROVIDER (repeatable) a call of TOOL needs the user's account at PROVIDER,
connected at the authorization server: protect exchanges the MCP access token for the user's
PROVIDER token (the --exchange-* flags) and sends that, never the MCP token, in --connect-header.
A user who has not connected PROVIDER gets protect's own answer, a URL-mode elicitation to the
authorization server's connect page (an InputRequiredResult with a sealed requestState for
2026-07-28 clients, the -32042 error for 2025-11-25 ones); the client's retry is verified (same
user, client, tool and arguments, unexpired, once) and forwarded without the state.`

// protectConnectFlags are protect's flags for --connect-tool.
type protectConnectFlags struct {
	tools          listFlag
	header, keyEnv string
}

func (c *protectConnectFlags) register(fs *flag.FlagSet) {
	fs.Var(&c.tools, "connect-tool", "`TOOL=PROVIDER`: calls of TOOL need the user's token at PROVIDER (the authorization server's name for it, e.g. github), "+
		"sent to the protected server in --connect-header; a user who has not connected it is asked to (URL-mode elicitation). Repeatable")
	fs.StringVar(&c.header, "connect-header", "", "with --connect-tool: the `HEADER` that carries the provider's token to the protected server, e.g. X-Provider-Token; "+
		"whatever the caller sends under that name, in any spelling, is dropped")
	fs.StringVar(&c.keyEnv, "connect-state-key", "", "with --connect-tool: env:VAR, the base64 key (32 bytes) that seals requestState, the same for every replica "+
		"(default: random per process, so a retry must reach the same process)")
}

// connectGate is --connect-tool at work.
type connectGate struct {
	header string            // canonical
	tools  map[string]string // tool -> provider
	conn   *resource.Connector
	states *requeststate.Sealer
	logger *slog.Logger
}

// config checks the flags and returns the gate, or nil without
// --connect-tool. pass holds the --exchange-* flags.
//
// defaultKey seals requestState without --connect-state-key (random per
// process); used records each state once, and is shared by the
// configurations a reload builds.
func (c *protectConnectFlags) config(pass *passUpstreamFlags, issuers []string, insecureHTTP bool, getenv func(string) string, logger *slog.Logger,
	defaultKey []byte, used replay.Store) (*connectGate, error) {
	if len(c.tools) == 0 {
		if c.header != "" || c.keyEnv != "" {
			return nil, errors.New("--connect-header and --connect-state-key need --connect-tool")
		}
		return nil, nil
	}
	if c.header == "" {
		return nil, errors.New("--connect-tool needs --connect-header")
	}
	header, err := checkPassHeader(c.header)
	if err != nil {
		return nil, fmt.Errorf("--connect-header: %w", err)
	}
	if pass.header != "" && header == http.CanonicalHeaderKey(pass.header) {
		return nil, errors.New("--connect-header and --pass-upstream-token must name different headers")
	}
	tools := map[string]string{}
	for _, t := range c.tools {
		tool, provider, ok := strings.Cut(t, "=")
		if !ok || tool == "" || provider == "" || strings.ContainsAny(t, " \t\r\n") {
			return nil, fmt.Errorf("--connect-tool: %q is not TOOL=PROVIDER", t)
		}
		if _, dup := tools[tool]; dup {
			return nil, fmt.Errorf("--connect-tool: %s given twice", tool)
		}
		tools[tool] = provider
	}
	key := defaultKey
	if c.keyEnv != "" {
		v, err := envSecret("--connect-state-key", c.keyEnv, getenv)
		if err != nil {
			return nil, err
		}
		if key, err = requeststate.ParseKey(v); err != nil {
			return nil, fmt.Errorf("--connect-state-key: %w", err)
		}
	}
	states, err := requeststate.New(requeststate.Config{Key: key, Replay: used})
	if err != nil {
		return nil, err
	}
	ex, err := pass.exchanger(issuers, insecureHTTP, getenv)
	if err != nil {
		return nil, err
	}
	conn, err := resource.NewConnector(resource.ConnectConfig{Exchanger: ex, States: states})
	if err != nil {
		return nil, err
	}
	return &connectGate{header: header, tools: tools, conn: conn, states: states, logger: logger}, nil
}

// connectTokenKey is the context key of the provider token, from the gate
// to the proxy's Rewrite.
type connectTokenKey struct{}

// connectToken is a provider token and the header it goes in.
type connectToken struct{ header, value string }

// toolCall is the part of a tools/call request the gate reads.
type toolCall struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		RequestState   string          `json:"requestState"`
		InputResponses json.RawMessage `json:"inputResponses"`
		Meta           struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities    struct {
				Elicitation *struct {
					URL json.RawMessage `json:"url"`
				} `json:"elicitation"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// wrap returns the handler that answers calls of the gate's tools for
// users who have not connected the provider, and hands the others to
// next with the provider token in the context. Requests that are not
// calls of those tools pass unchanged, without any provider token.
func (g *connectGate) wrap(v *resource.Verifier, maxBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		// Bounded by the middleware's own limit, so that a body it let
		// through is never refused here.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		r = withBody(r, r.Context(), body)
		var call toolCall
		if oauthmeta.DecodeJSON(body, &call) != nil || call.Method != "tools/call" || g.tools[call.Params.Name] == "" {
			next.ServeHTTP(w, r)
			return
		}
		provider := g.tools[call.Params.Name]
		rc := resource.Call{Name: call.Params.Name, Arguments: call.Params.Arguments, RequestState: call.Params.RequestState,
			InputResponses: call.Params.InputResponses, ProtocolVersion: call.Params.Meta.ProtocolVersion,
			URLElicitation: call.Params.Meta.Capabilities.Elicitation != nil && call.Params.Meta.Capabilities.Elicitation.URL != nil}
		if rc.ProtocolVersion == "" {
			rc.ProtocolVersion = r.Header.Get("Mcp-Protocol-Version")
			rc.URLElicitation = true // a 2025-11-25 client is sent the -32042 error, which any client can show
		}
		ours := rc.RequestState != "" && g.sealedHere(r.Context(), rc)
		if !ours {
			rc.RequestState, rc.InputResponses = "", nil // the protected server's own state, if any
		}
		tok, err := g.conn.ProviderToken(r.Context(), provider, rc)
		var need *resource.ConnectRequired
		switch {
		case errors.As(err, &need):
			g.logger.Info("provider not connected: asking the user", "tool", call.Params.Name, "provider", provider, "sub", subjectOf(r))
			if need.IsError() {
				writeRPC(w, call.ID, nil, need.RPCError())
			} else {
				writeRPC(w, call.ID, need.Result(), nil)
			}
			return
		case errors.Is(err, requeststate.ErrRefused):
			g.logger.Warn("requestState refused", "tool", call.Params.Name, "sub", subjectOf(r), "error", err)
			writeRPC(w, call.ID, nil, &resource.RPCError{Code: resource.CodeInvalidParams, Message: "invalid requestState"})
			return
		case errors.Is(err, resource.ErrConnectDeclined):
			writeRPC(w, call.ID, map[string]any{"resultType": "complete", "isError": true,
				"content": []map[string]string{{"type": "text", "text": "The user declined to connect " + provider + "."}}}, nil)
			return
		case err != nil:
			g.logger.Warn("provider token exchange failed", "status", resource.ExchangeStatus(err), "sub", subjectOf(r), "provider", provider, "error", err)
			v.DenyExchange(w, r, err)
			return
		}
		if ours {
			if body, err = withoutState(body); err != nil {
				writeRPC(w, call.ID, nil, &resource.RPCError{Code: resource.CodeInvalidParams, Message: "invalid params"})
				return
			}
		}
		ctx := context.WithValue(r.Context(), connectTokenKey{}, connectToken{header: g.header, value: tok.AccessToken})
		next.ServeHTTP(w, withBody(r, ctx, body))
	})
}

// sealedHere reports whether the call's requestState is one of the gate's:
// anything that authenticates under its key, whether or not it is valid
// for this call (ProviderToken then refuses it). Another state belongs to
// the protected server.
func (g *connectGate) sealedHere(ctx context.Context, rc resource.Call) bool {
	_, err := g.states.Open(ctx, rc.RequestState, requeststate.Binding{})
	return !errors.Is(err, requeststate.ErrMalformed)
}

// withoutState returns body without params.requestState and
// params.inputResponses, which were the gate's and mean nothing to the
// protected server.
func withoutState(body []byte) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, err
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(msg["params"], &params); err != nil {
		return nil, err
	}
	delete(params, "requestState")
	delete(params, "inputResponses")
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	msg["params"] = p
	return json.Marshal(msg)
}

// withBody returns a shallow copy of r with ctx and body.
func withBody(r *http.Request, ctx context.Context, body []byte) *http.Request {
	r2 := r.Clone(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return r2
}

// writeRPC writes a JSON-RPC response with result or rpcErr.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, rpcErr *resource.RPCError) {
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		resp["error"] = rpcErr
	} else {
		resp["result"] = result
	}
	if len(id) == 0 {
		resp["id"] = nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(resp)
}

func subjectOf(r *http.Request) string {
	if info := resource.TokenInfoFromContext(r.Context()); info != nil {
		return info.Subject
	}
	return ""
}

// connectHeaders lists the gate's header for the proxy's drop rule.
func (g *connectGate) connectHeaders() []string {
	if g == nil {
		return nil
	}
	return []string{g.header}
}
