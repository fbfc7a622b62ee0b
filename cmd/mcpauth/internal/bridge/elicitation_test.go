package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestURLElicitationRequiredNotice: a -32042 answer, as JSON or in an
// event stream, reaches the host unchanged and its data the callback;
// other errors do not.
func TestURLElicitationRequiredNotice(t *testing.T) {
	t.Parallel()
	const data = `{"elicitations":[{"mode":"url","elicitationId":"connect-github","message":"m","url":"https://as.example.com/connect/github?ref=1"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(readBody(r)), &m)
		switch m.Params.Name {
		case "json":
			jsonAnswer(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32042,"message":"URL elicitation required","data":`+data+`}}`)
		case "stream":
			sse(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32042,"message":"URL elicitation required","data":`+data+`}}`)
		default:
			jsonAnswer(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32602,"message":"-32042 is not this code","data":`+data+`}}`)
		}
	}))
	defer srv.Close()
	var mu sync.Mutex
	var got []string
	h := startBridge(t, context.Background(), Config{URL: srv.URL + "/mcp", OnURLElicitationRequired: func(d json.RawMessage) {
		mu.Lock()
		got = append(got, string(d))
		mu.Unlock()
	}})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for i, tool := range []string{"json", "stream", "other"} {
		h.send(`{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"tools/call","params":{"name":"` + tool + `",` + meta + `}}`)
		m := h.recv()
		want := -32042
		if tool == "other" {
			want = -32602
		}
		if errorCode(m) != want {
			t.Fatalf("%s: the host got %v", tool, m)
		}
		e := m["error"].(map[string]any)
		if el := e["data"].(map[string]any)["elicitations"].([]any); len(el) != 1 {
			t.Fatalf("%s: data changed: %v", tool, e)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != data || got[1] != data {
		t.Fatalf("callback got %q", got)
	}
}

// elicitServer is an MCP server whose tool "connect" needs a URL
// elicitation: 2026-07-28 requests get an InputRequiredResult (only when
// they declare URL elicitation, else -32021) and succeed on a retry with
// the requestState and an accepted inputResponse; 2025-11-25 requests get
// -32042 until `after` calls were made.
type elicitServer struct {
	mu     sync.Mutex
	calls  int
	after  int
	bodies []string
}

func (s *elicitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
				Caps    struct {
					Elicitation struct {
						URL json.RawMessage `json:"url"`
					} `json:"elicitation"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
			RequestState   string                       `json:"requestState"`
			InputResponses map[string]map[string]string `json:"inputResponses"`
		} `json:"params"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	id := string(m.ID)
	const el = `{"mode":"url","message":"Connect GitHub","url":"https://as.example.com/connect/github?ref=R"}`
	switch {
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "S")
		jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	case m.Method != "tools/call":
		w.WriteHeader(http.StatusAccepted)
	case m.Params.Meta.Version == "":
		if n-1 <= s.after { // the initialize was call 1
			jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32042,"message":"URL elicitation required","data":{"elicitations":[`+strings.Replace(el, `{`, `{"elicitationId":"connect-github",`, 1)+`]}}}`)
			return
		}
		jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"done"}]}}`)
	case len(m.Params.Meta.Caps.Elicitation.URL) == 0:
		jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32021,"message":"needs url elicitation"}}`)
	case m.Params.RequestState == "":
		sse(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
			`{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"input_required","inputRequests":{"connect-github":{"method":"elicitation/create","params":`+el+`}},"requestState":"STATE"}}`)
	case m.Params.RequestState != "STATE":
		jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"bad requestState"}}`)
	case m.Params.InputResponses["connect-github"]["action"] == "accept":
		jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"done"}]}}`)
	default:
		jsonAnswer(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"declined"}}`)
	}
}

// TestElicit: for a host without URL elicitation the bridge asks through
// Config.Elicit and the host gets the retry's answer; a host that
// declared it gets the server's answer unchanged; rounds are bounded.
func TestElicit(t *testing.T) {
	t.Parallel()
	const wantData = `{"elicitations":[{"mode":"url","message":"Connect GitHub","url":"https://as.example.com/connect/github?ref=R","elicitationId":"connect-github"}]}`
	meta := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	for _, tc := range []struct {
		name     string
		init     string // a 2025-11-25 initialize, or none
		call     string // params of tools/call
		after    int    // 2025: calls answered -32042
		accept   bool
		asks     int // calls of Elicit
		wantText string
		wantCode int
	}{
		{name: "2026 accepted", call: `{"name":"connect",` + meta(`{}`) + `}`, accept: true, asks: 1, wantText: "done"},
		{name: "2026 declined", call: `{"name":"connect",` + meta(`{"roots":{}}`) + `}`, asks: 1, wantCode: -32603},
		{name: "2026 host declares", call: `{"name":"connect",` + meta(`{"elicitation":{"url":{}}}`) + `}`, accept: true},
		{name: "2025 accepted", init: `{}`, call: `{"name":"connect"}`, after: 1, accept: true, asks: 1, wantText: "done"},
		{name: "2025 declined", init: `{}`, call: `{"name":"connect"}`, after: 1, asks: 1, wantCode: -32042},
		{name: "2025 bounded", init: `{"elicitation":{"form":{}}}`, call: `{"name":"connect"}`, after: 99, accept: true, asks: DefaultMaxElicitationRounds, wantCode: -32042},
		{name: "2025 host declares", init: `{"elicitation":{"url":{}}}`, call: `{"name":"connect"}`, after: 1, accept: true, wantCode: -32042},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &elicitServer{after: tc.after}
			srv := httptest.NewServer(s)
			defer srv.Close()
			var mu sync.Mutex
			var asked []string
			h := startBridge(t, context.Background(), Config{URL: srv.URL + "/mcp",
				Elicit: func(ctx context.Context, data json.RawMessage) (bool, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, string(data))
					return tc.accept, nil
				}})
			if tc.init != "" {
				h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + tc.init + `,"clientInfo":{"name":"h","version":"1"}}}`)
				if m := h.recv(); m["result"] == nil {
					t.Fatalf("initialize: %v", m)
				}
			}
			h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + tc.call + `}`)
			m := h.recv()
			if m["method"] == "notifications/message" {
				m = h.recv()
			}
			if m["id"] != float64(7) {
				t.Fatalf("answer %v", m)
			}
			if tc.wantCode != 0 && errorCode(m) != tc.wantCode {
				t.Fatalf("want error %d, got %v", tc.wantCode, m)
			}
			if tc.wantText != "" {
				r, _ := m["result"].(map[string]any)
				if c, _ := r["content"].([]any); len(c) != 1 || c[0].(map[string]any)["text"] != tc.wantText {
					t.Fatalf("want %q, got %v", tc.wantText, m)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != tc.asks {
				t.Fatalf("Elicit called %d times, want %d", len(asked), tc.asks)
			}
			for _, d := range asked {
				var got, want any
				_ = json.Unmarshal([]byte(d), &got)
				_ = json.Unmarshal([]byte(wantData), &want)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Elicit got %s", d)
				}
			}
			if tc.name == "2026 accepted" {
				// The retry is the host's request, with the answer and the state.
				s.mu.Lock()
				last := s.bodies[len(s.bodies)-1]
				s.mu.Unlock()
				for _, want := range []string{`"requestState":"STATE"`, `"inputResponses":{"connect-github":{"action":"accept"}}`, `"name":"connect"`, `"url":{}`} {
					if !strings.Contains(last, want) {
						t.Fatalf("retry %s lacks %s", last, want)
					}
				}
			}
		})
	}
}

// TestElicitCancelled: a host's cancellation ends a pending Elicit and
// the host gets no answer; the next request is relayed.
func TestElicitCancelled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&elicitServer{after: 99})
	defer srv.Close()
	asked := make(chan struct{})
	ended := make(chan error, 1)
	h := startBridge(t, context.Background(), Config{URL: srv.URL + "/mcp",
		Elicit: func(ctx context.Context, data json.RawMessage) (bool, error) {
			close(asked)
			<-ctx.Done()
			ended <- ctx.Err()
			return false, ctx.Err()
		}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"connect","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	<-asked
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if err := <-ended; err == nil {
		t.Fatal("Elicit's ctx did not end")
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	m := h.recv()
	if m["method"] == "notifications/message" {
		m = h.recv()
	}
	if m["id"] != float64(2) {
		t.Fatalf("after the cancellation the host got %v", m)
	}
}
