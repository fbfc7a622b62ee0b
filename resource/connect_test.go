package resource_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
	"github.com/mcpauth/mcpauth/resource"
)

// connectEnv is an MCP server's view of the connect flow: the fixture's
// verifier, an authorization server whose token endpoint honours the
// connect contract, and a Connector.
type connectEnv struct {
	f      *fixture
	as     *oauthtest.AS
	conns  *oauthtest.Connections
	conn   *resource.Connector
	tokens map[string]string // "alice", "bob", "alice@other-client" -> access token
}

func newConnectEnv(t *testing.T) *connectEnv { return newConnectEnvAt(t, "") }

// newConnectEnvAt is newConnectEnv for a server at resourceURL ("" for the
// fixture's).
func newConnectEnvAt(t *testing.T, resourceURL string) *connectEnv {
	t.Helper()
	conns := &oauthtest.Connections{ClientID: "rs", Secret: "rs-secret"}
	as := oauthtest.NewAS(t, oauthtest.ASOptions{Faults: map[string]http.HandlerFunc{"/token": conns.Handler}})
	conns.Base = as.URL
	f := newFixture(t, func(c *resource.Config) {
		c.Issuers[0].Issuer = as.URL
		c.InsecureAllowHTTPLoopback = true
		if resourceURL != "" {
			c.Resource = resourceURL
		}
	})
	ex, err := resource.NewExchanger(resource.ExchangeConfig{TokenEndpoint: as.URL + "/token", ClientID: "rs",
		ClientSecret: "rs-secret", InsecureAllowHTTPLoopback: true, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := replay.NewMemory(replay.MemoryConfig{Now: f.clock.Now})
	states, err := requeststate.New(requeststate.Config{Key: bytes.Repeat([]byte{1}, 32), TTL: 10 * time.Minute,
		Replay: store, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := resource.NewConnector(resource.ConnectConfig{Exchanger: ex, States: states})
	if err != nil {
		t.Fatal(err)
	}
	e := &connectEnv{f: f, as: as, conns: conns, conn: conn, tokens: map[string]string{}}
	for name, claims := range map[string][2]string{"alice": {"alice", "client-1"}, "bob": {"bob", "client-1"},
		"alice@other-client": {"alice", "client-2"}} {
		tok := f.token(func(c *oauthtest.AccessToken) {
			c.Issuer, c.Subject, c.ClientID = as.URL, claims[0], claims[1]
			if resourceURL != "" {
				c.Audience = []string{resourceURL}
			}
		})
		e.tokens[name] = tok
		conns.Subject(tok, claims[0])
	}
	return e
}

// providerToken serves one verified request of who and asks for provider.
func (e *connectEnv) providerToken(who, provider string, call resource.Call) (*resource.ExchangedToken, error) {
	var tok *resource.ExchangedToken
	var err error
	h := e.f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err = e.conn.ProviderToken(r.Context(), provider, call)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, mcpPost(e.tokens[who], `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	if rec.Code != http.StatusOK {
		e.f.t.Fatalf("middleware: %d", rec.Code)
	}
	return tok, err
}

func modernCall(tool, args string) resource.Call {
	return resource.Call{Name: tool, Arguments: json.RawMessage(args), ProtocolVersion: "2026-07-28", URLElicitation: true}
}

// firstAnswer asks as alice for github and returns the elicitation answer.
func (e *connectEnv) firstAnswer(t *testing.T, call resource.Call) *resource.ConnectRequired {
	t.Helper()
	tok, err := e.providerToken("alice", "github", call)
	var need *resource.ConnectRequired
	if tok != nil || !errors.As(err, &need) || !errors.Is(err, resource.ErrConnectRequired) {
		t.Fatalf("first call = %+v, %v; want ConnectRequired", tok, err)
	}
	return need
}

func TestProviderTokenInputRequired(t *testing.T) {
	t.Parallel()
	e := newConnectEnv(t)
	call := modernCall("list_repos", `{"org":"acme"}`)
	need := e.firstAnswer(t, call)
	res := need.Result()
	if need.IsError() || res == nil || need.RPCError() != nil {
		t.Fatalf("2026-07-28 answer is not a result: %+v", need)
	}
	wire, _ := json.Marshal(res)
	var got struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string            `json:"method"`
			Params map[string]string `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	ir, ok := got.InputRequests["connect-github"]
	if got.ResultType != "input_required" || !ok || ir.Method != "elicitation/create" || ir.Params["mode"] != "url" ||
		!strings.HasPrefix(ir.Params["url"], e.as.URL+"/connect/github?ref=") || ir.Params["message"] == "" ||
		len(ir.Params) != 3 || got.RequestState == "" {
		t.Fatalf("InputRequiredResult = %s", wire)
	}
	for _, secret := range []string{e.tokens["alice"], "provider-secret", "alice", "client-1"} {
		if bytes.Contains(wire, []byte(secret)) || strings.Contains(need.Error(), secret) {
			t.Errorf("the answer shows %q: %s", secret, wire)
		}
	}

	// The user connects; the client retries with the state.
	e.conns.Connect("alice", "github")
	retry := call
	retry.RequestState = got.RequestState
	retry.InputResponses = json.RawMessage(`{"connect-github":{"action":"accept"}}`)
	tok, err := e.providerToken("alice", "github", retry)
	if err != nil || tok.AccessToken != oauthtest.ProviderToken("alice", "github") {
		t.Fatalf("retry after connecting = %+v, %v", tok, err)
	}
	if _, err := e.providerToken("alice", "github", retry); !errors.Is(err, requeststate.ErrReplayed) {
		t.Fatalf("replayed state: %v", err)
	}
}

// TestProviderTokenRetryStillNotConnected: a retry before the user has
// finished asks again, with a new state.
func TestProviderTokenRetryStillNotConnected(t *testing.T) {
	t.Parallel()
	e := newConnectEnv(t)
	call := modernCall("list_repos", `{}`)
	first := e.firstAnswer(t, call)
	call.RequestState = first.RequestState
	second := e.firstAnswer(t, call)
	if second.RequestState == "" || second.RequestState == first.RequestState {
		t.Fatal("the second elicitation reuses the state")
	}
}

func TestProviderTokenRefusesState(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		who     string
		mutate  func(c *resource.Call)
		advance time.Duration
		want    error
	}{
		{name: "tampered", who: "alice", mutate: func(c *resource.Call) {
			raw, _ := base64.RawURLEncoding.DecodeString(c.RequestState)
			raw[len(raw)-1] ^= 0x40
			c.RequestState = base64.RawURLEncoding.EncodeToString(raw)
		}, want: requeststate.ErrMalformed},
		{name: "expired", who: "alice", advance: 11 * time.Minute, want: requeststate.ErrExpired},
		{name: "other user", who: "bob", want: requeststate.ErrMismatch},
		{name: "other client", who: "alice@other-client", want: requeststate.ErrMismatch},
		{name: "other tool", who: "alice", mutate: func(c *resource.Call) { c.Name = "delete_repo" }, want: requeststate.ErrMismatch},
		{name: "other arguments", who: "alice", mutate: func(c *resource.Call) { c.Arguments = json.RawMessage(`{"org":"evil"}`) }, want: requeststate.ErrMismatch},
		{name: "other method", who: "alice", mutate: func(c *resource.Call) { c.Method = "prompts/get" }, want: requeststate.ErrMismatch},
		{name: "declined", who: "alice", mutate: func(c *resource.Call) {
			c.InputResponses = json.RawMessage(`{"connect-github":{"action":"decline"}}`)
		}, want: resource.ErrConnectDeclined},
		{name: "cancelled", who: "alice", mutate: func(c *resource.Call) {
			c.InputResponses = json.RawMessage(`{"connect-github":{"action":"cancel"}}`)
		}, want: resource.ErrConnectDeclined},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newConnectEnv(t)
			call := modernCall("list_repos", `{"org":"acme"}`)
			need := e.firstAnswer(t, call)
			e.conns.Connect("alice", "github")
			e.conns.Connect("bob", "github")
			call.RequestState = need.RequestState
			if tc.mutate != nil {
				tc.mutate(&call)
			}
			e.f.clock.Advance(tc.advance)
			before := e.conns.Exchanges()
			tok, err := e.providerToken(tc.who, "github", call)
			if tok != nil || !errors.Is(err, tc.want) {
				t.Fatalf("retry = %+v, %v; want %v", tok, err, tc.want)
			}
			if tc.want != resource.ErrConnectDeclined && !errors.Is(err, requeststate.ErrRefused) {
				t.Fatalf("refusal %v does not wrap ErrRefused", err)
			}
			if n := e.conns.Exchanges() - before; n != 0 {
				t.Fatalf("%d exchanges after a refused state", n)
			}
		})
	}
}

// TestProviderTokenStateForAnotherProvider: a state made for one provider
// does not pass a tool asking for another.
func TestProviderTokenStateForAnotherProvider(t *testing.T) {
	t.Parallel()
	e := newConnectEnv(t)
	call := modernCall("sync", `{}`)
	need := e.firstAnswer(t, call)
	call.RequestState = need.RequestState
	if _, err := e.providerToken("alice", "slack", call); !errors.Is(err, requeststate.ErrMismatch) {
		t.Fatalf("state of github on slack: %v", err)
	}
}

func TestProviderTokenLegacyAndUnsupported(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		call  resource.Call
		code  int
		check func(t *testing.T, data []byte)
	}{
		{name: "2025-11-25", call: resource.Call{Name: "t", ProtocolVersion: "2025-11-25", URLElicitation: true},
			code: resource.CodeURLElicitationRequired, check: func(t *testing.T, data []byte) {
				var d struct {
					Elicitations []map[string]string `json:"elicitations"`
				}
				if err := json.Unmarshal(data, &d); err != nil || len(d.Elicitations) != 1 {
					t.Fatalf("data = %s", data)
				}
				el := d.Elicitations[0]
				if el["mode"] != "url" || el["elicitationId"] != "connect-github" || el["message"] == "" ||
					!strings.Contains(el["url"], "/connect/github?ref=") {
					t.Fatalf("elicitation = %v", el)
				}
			}},
		{name: "2026-07-28 without url elicitation", call: resource.Call{Name: "t", ProtocolVersion: "2026-07-28"},
			code: resource.CodeMissingRequiredClientCapability, check: func(t *testing.T, data []byte) {
				if string(data) != `{"requiredCapabilities":{"elicitation":{"url":{}}}}` {
					t.Fatalf("data = %s", data)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newConnectEnv(t)
			need := e.firstAnswer(t, tc.call)
			rpc := need.RPCError()
			if !need.IsError() || need.Result() != nil || rpc == nil || rpc.Code != tc.code || need.RequestState != "" {
				t.Fatalf("answer = %+v, %+v", need, rpc)
			}
			tc.check(t, rpc.Data)
			wire, _ := json.Marshal(rpc)
			if bytes.Contains(wire, []byte(e.tokens["alice"])) || bytes.Contains(wire, []byte("provider-secret")) {
				t.Fatalf("the error shows a token: %s", wire)
			}
			// A 2025-11-25 client retries without state once connected.
			e.conns.Connect("alice", "github")
			if tok, err := e.providerToken("alice", "github", tc.call); err != nil || tok.AccessToken == "" {
				t.Fatalf("retry after connecting: %v", err)
			}
		})
	}
}

// TestExchangeConnectURIRefused: a refusal whose connect_uri is not a safe
// URL at the authorization server's origin is a plain invalid_grant,
// never an elicitation.
func TestExchangeConnectURIRefused(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]func(base string) string{
		"foreign origin": func(string) string {
			return `{"error":"invalid_grant","connect_uri":"https://evil.example/connect/github?ref=x"}`
		},
		"other port": func(base string) string {
			return `{"error":"invalid_grant","connect_uri":"http://127.0.0.1:1/connect/github?ref=x"}`
		},
		"javascript": func(string) string { return `{"error":"invalid_grant","connect_uri":"javascript:alert(1)"}` },
		"relative":   func(string) string { return `{"error":"invalid_grant","connect_uri":"/connect/github?ref=x"}` },
		"userinfo": func(base string) string {
			return `{"error":"invalid_grant","connect_uri":"` + strings.Replace(base, "://", "://u:p@", 1) + `/connect/github"}`
		},
		"not a string": func(string) string { return `{"error":"invalid_grant","connect_uri":5}` },
		"duplicate member": func(base string) string {
			return `{"error":"invalid_grant","connect_uri":"` + base + `/c?r=1","connect_uri":"https://evil.example/"}`
		},
		"other error": func(base string) string {
			return `{"error":"invalid_request","connect_uri":"` + base + `/connect/github?ref=x"}`
		},
		"oversized": func(base string) string {
			return `{"error":"invalid_grant","connect_uri":"` + base + `/connect/github?ref=x","pad":"` + strings.Repeat("a", 70<<10) + `"}`
		},
		"origin only": func(base string) string { return `{"error":"invalid_grant","connect_uri":"` + base + `"}` },
		"control character": func(base string) string {
			return `{"error":"invalid_grant","connect_uri":"` + base + `/connect/\u0007github"}`
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newConnectEnv(t)
			e.conns.Refusal = func(string) string { return body(e.as.URL) }
			tok, err := e.providerToken("alice", "github", modernCall("t", `{}`))
			if tok != nil || errors.Is(err, resource.ErrConnectRequired) || !errors.Is(err, resource.ErrExchange) {
				t.Fatalf("ProviderToken = %+v, %v; want a plain refusal", tok, err)
			}
			if !strings.Contains("other error|duplicate member|not a string|oversized", name) && !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) {
				t.Fatalf("err = %v, want invalid_grant", err)
			}
		})
	}
}

func TestConnectRequiredStatus(t *testing.T) {
	t.Parallel()
	e := newConnectEnv(t)
	_, err := e.providerToken("alice", "github", modernCall("t", `{}`))
	if got := resource.ExchangeStatus(err); got != http.StatusForbidden {
		t.Fatalf("ExchangeStatus = %d, want 403 (logging in again would not help)", got)
	}
	if _, err := e.conn.ProviderToken(context.Background(), "github", resource.Call{}); !errors.Is(err, resource.ErrNoToken) {
		t.Fatalf("without a verified request: %v", err)
	}
	if _, err := resource.NewConnector(resource.ConnectConfig{}); !errors.Is(err, resource.ErrInvalidConfig) {
		t.Fatalf("NewConnector without parts: %v", err)
	}
}
