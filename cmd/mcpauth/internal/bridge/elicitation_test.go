package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
