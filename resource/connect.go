package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/requeststate"
)

// MCP protocol versions [Connector.ProviderToken] answers differently.
const (
	// ProtocolVersionMRTR is the first MCP version with multi round-trip
	// requests: the elicitation is an InputRequiredResult.
	ProtocolVersionMRTR = "2026-07-28"
	// ProtocolVersionURLElicitationError is the version whose clients are
	// sent the URL elicitation as the -32042 error.
	ProtocolVersionURLElicitationError = "2025-11-25"
)

// JSON-RPC error codes of the connect flow.
const (
	// CodeURLElicitationRequired is the 2025-11-25 URL-elicitation-required
	// error.
	CodeURLElicitationRequired = -32042
	// CodeMissingRequiredClientCapability answers a 2026-07-28 request
	// whose client did not declare URL-mode elicitation.
	CodeMissingRequiredClientCapability = -32021
	// CodeInvalidParams answers a requestState that does not verify.
	CodeInvalidParams = -32602
)

// ErrConnectDeclined is returned by [Connector.ProviderToken] on a retry
// whose user declined or cancelled the elicitation: the tool should
// answer with an error result, not ask again.
var ErrConnectDeclined = errors.New("resource: the user declined to connect the provider")

// ConnectConfig configures [NewConnector].
type ConnectConfig struct {
	// Exchanger obtains the provider's token by token exchange. Required.
	Exchanger *Exchanger
	// States seals the requestState of the elicitations and opens it on
	// the retry. Required; replicas share its key, and its replay store
	// for single use.
	States *requeststate.Sealer
	// Message is what the elicitation tells the user. Nil means "Connect
	// your <provider> account to continue."
	Message func(provider string) string
}

// Connector gives tool handlers the user's token at a third-party
// provider, or the answer that asks the user to connect the provider
// (URL-mode elicitation). The provider's token never reaches the MCP
// client. It is safe for concurrent use.
type Connector struct {
	cfg ConnectConfig
}

// NewConnector validates cfg. It does no I/O.
func NewConnector(cfg ConnectConfig) (*Connector, error) {
	if cfg.Exchanger == nil || cfg.States == nil {
		return nil, fmt.Errorf("%w: a connector needs an Exchanger and a requestState sealer", ErrInvalidConfig)
	}
	return &Connector{cfg: cfg}, nil
}

// Call is the MCP request a tool handler is serving, as received.
type Call struct {
	// Method is the request's method. Empty means "tools/call".
	Method string
	// Name is the tool's name (prompt name, resource URI).
	Name string
	// Arguments are the request's arguments as JSON.
	Arguments json.RawMessage
	// ProtocolVersion is the version the client speaks; from
	// [ProtocolVersionMRTR] on the answer is an InputRequiredResult,
	// before it the -32042 error.
	ProtocolVersion string
	// URLElicitation reports that the client declared URL-mode
	// elicitation (capabilities.elicitation.url).
	URLElicitation bool
	// RequestState is the retried request's requestState; empty on a
	// first call.
	RequestState string
	// InputResponses are the retried request's inputResponses, as JSON.
	InputResponses json.RawMessage
}

// ProviderToken returns the token of the request's user at provider (the
// authorization server's name for it, e.g. "github"), by token exchange
// with the request's verified access token.
//
// When the user has not connected the provider, the error is a
// [*ConnectRequired] holding the ready answer: an InputRequiredResult with
// a URL-mode elicitation and a sealed requestState, or the -32042 error
// for a 2025-11-25 client. On the client's retry the requestState is
// verified (bound to the user, the client, the tool and its arguments);
// a state that does not verify is an error wrapping
// requeststate.ErrRefused, to be answered with [CodeInvalidParams]; a
// declined elicitation is [ErrConnectDeclined]. Other errors are those of
// [Exchanger.Exchange].
func (c *Connector) ProviderToken(ctx context.Context, provider string, call Call) (*ExchangedToken, error) {
	info := TokenInfoFromContext(ctx)
	if info == nil {
		return nil, fmt.Errorf("%w: %w: no verified request in the context", ErrExchange, ErrNoToken)
	}
	b := requeststate.Binding{Issuer: info.Issuer, Subject: info.Subject, ClientID: info.ClientID,
		Method: call.method(), Name: call.Name, Arguments: call.Arguments}
	key := elicitationKey(provider)
	if call.RequestState != "" {
		data, err := c.cfg.States.Open(ctx, call.RequestState, b)
		if err != nil {
			return nil, err
		}
		if string(data) != provider {
			return nil, &requeststate.MismatchError{Field: "name"}
		}
		if action := responseAction(call.InputResponses, key); action == "decline" || action == "cancel" {
			return nil, fmt.Errorf("%w %s", ErrConnectDeclined, provider)
		}
	}
	tok, err := c.cfg.Exchanger.Exchange(ctx, provider)
	var cre *ConnectRequiredError
	if !errors.As(err, &cre) {
		return tok, err
	}
	need := &ConnectRequired{Provider: provider, Legacy: call.ProtocolVersion < ProtocolVersionMRTR,
		NotSupported: !call.URLElicitation, cause: cre}
	need.Elicitation = URLElicitation{Mode: "url", Message: c.message(provider), URL: cre.ConnectURI}
	if need.Legacy {
		need.Elicitation.ElicitationID = key
	}
	if need.IsError() {
		return nil, need
	}
	if need.RequestState, err = c.cfg.States.Seal(b, []byte(provider)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrExchange, err)
	}
	need.key = key
	return nil, need
}

func (c *Connector) message(provider string) string {
	if c.cfg.Message != nil {
		return c.cfg.Message(provider)
	}
	return "Connect your " + provider + " account to continue."
}

func (call *Call) method() string {
	if call.Method == "" {
		return "tools/call"
	}
	return call.Method
}

// elicitationKey is the inputRequests key (2026-07-28) or elicitationId
// (2025-11-25) of the elicitation for provider.
func elicitationKey(provider string) string { return "connect-" + provider }

// responseAction is the action of the client's answer under key, or "".
func responseAction(responses json.RawMessage, key string) string {
	if len(responses) == 0 {
		return ""
	}
	var m map[string]struct {
		Action string `json:"action"`
	}
	if oauthmeta.DecodeJSON(responses, &m) != nil {
		return ""
	}
	return m[key].Action
}

// URLElicitation is the params of a URL-mode elicitation/create request,
// as sent.
type URLElicitation struct {
	// Mode is "url".
	Mode string `json:"mode"`
	// Message tells the user why.
	Message string `json:"message"`
	// URL is where the user connects the account: the authorization
	// server's connect page.
	URL string `json:"url"`
	// ElicitationID identifies the elicitation in a 2025-11-25 error;
	// 2026-07-28 names it by its key in inputRequests instead.
	ElicitationID string `json:"elicitationId,omitempty"`
}

// InputRequest is one entry of an InputRequiredResult's inputRequests.
type InputRequest struct {
	Method string         `json:"method"`
	Params URLElicitation `json:"params"`
}

// InputRequiredResult is the result of a request that needs the user's
// input before it can complete (MCP 2026-07-28, multi round-trip
// requests).
type InputRequiredResult struct {
	// ResultType is "input_required".
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// ConnectRequired is the answer to a request whose user must first connect
// a provider. It wraps [ErrConnectRequired]. It holds the connect URL, never
// a token.
type ConnectRequired struct {
	// Provider is the provider to connect.
	Provider string
	// Elicitation is the URL-mode elicitation to send.
	Elicitation URLElicitation
	// RequestState is the sealed state for a 2026-07-28 client to echo;
	// empty for a 2025-11-25 client.
	RequestState string
	// Legacy: the client speaks a version before 2026-07-28, so the
	// answer is [ConnectRequired.RPCError] (-32042).
	Legacy bool
	// NotSupported: the client did not declare URL-mode elicitation, so
	// the answer is [ConnectRequired.RPCError] (-32021 for a 2026-07-28
	// client; -32042 for an older one, which shows the URL as an error).
	NotSupported bool
	key          string
	cause        *ConnectRequiredError
}

func (e *ConnectRequired) Error() string {
	return "resource: the user must connect " + e.Provider
}

// Unwrap returns the exchange's refusal, which wraps [ErrConnectRequired].
func (e *ConnectRequired) Unwrap() error { return e.cause }

// IsError reports whether the answer is the JSON-RPC error of
// [ConnectRequired.RPCError] rather than a result.
func (e *ConnectRequired) IsError() bool { return e.Legacy || e.NotSupported }

// Result is the InputRequiredResult asking a 2026-07-28 client for the
// elicitation, with the requestState to echo; nil when the answer is an
// error ([ConnectRequired.IsError]).
func (e *ConnectRequired) Result() *InputRequiredResult {
	if e.IsError() {
		return nil
	}
	return &InputRequiredResult{ResultType: "input_required", RequestState: e.RequestState,
		InputRequests: map[string]InputRequest{e.key: {Method: "elicitation/create", Params: e.Elicitation}}}
}

// RPCError is the JSON-RPC error answering a client the result cannot go
// to: -32042 with data.elicitations for a 2025-11-25 client, -32021
// naming the url elicitation capability for a 2026-07-28 client that did
// not declare it. Nil when the answer is [ConnectRequired.Result].
func (e *ConnectRequired) RPCError() *RPCError {
	switch {
	case e.Legacy:
		el := e.Elicitation
		el.ElicitationID = elicitationKey(e.Provider)
		data, _ := json.Marshal(map[string]any{"elicitations": []URLElicitation{el}})
		return &RPCError{Code: CodeURLElicitationRequired, Message: "URL elicitation required: " + e.Elicitation.Message, Data: data}
	case e.NotSupported:
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}})
		return &RPCError{Code: CodeMissingRequiredClientCapability, Message: "this tool needs URL-mode elicitation to connect " + e.Provider, Data: data}
	}
	return nil
}
