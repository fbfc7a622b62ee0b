package upstream

import (
	"bytes"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
	"github.com/mcpauth/mcpauth/resource"
)

// TestConnectThroughMCPServer: the MCP server's side of the connect flow
// against this authorization server: resource.Connector gets a URL-mode
// elicitation naming the server's own connect page, the user connects in
// the browser (login, confirmation, the provider's code flow), and the
// tool's retry with the sealed requestState gets the provider's token.
func TestConnectThroughMCPServer(t *testing.T) {
	h, _, vt := connectHarness(t, time.Hour)
	at := vaultLogin(t, h, rsResource).AccessToken
	hc := &http.Client{Transport: ownTransport(t), Timeout: 10 * time.Second}
	v, err := resource.New(resource.Config{Resource: rsResource, Issuers: []resource.Issuer{{Issuer: h.issuer}},
		InsecureAllowHTTPLoopback: true, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	ex, err := resource.NewExchanger(resource.ExchangeConfig{TokenEndpoint: h.url("/token"), ClientID: rsID, ClientSecret: rsSecret,
		HTTPClient: hc, InsecureAllowHTTPLoopback: true, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	used, _ := replay.NewMemory(replay.MemoryConfig{Now: h.clock.Now})
	states, err := requeststate.New(requeststate.Config{Key: bytes.Repeat([]byte{3}, 32), Replay: used, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := resource.NewConnector(resource.ConnectConfig{Exchanger: ex, States: states})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(call resource.Call) (*resource.ExchangedToken, error) {
		var tok *resource.ExchangedToken
		var err error
		mw := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err = conn.ProviderToken(r.Context(), "third", call)
		}))
		req := httptest.NewRequest(http.MethodPost, rsResource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_repos"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+at)
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("middleware: %d %s", rec.Code, rec.Body)
		}
		return tok, err
	}

	call := resource.Call{Name: "list_repos", Arguments: []byte(`{"org":"acme"}`), ProtocolVersion: "2026-07-28", URLElicitation: true}
	_, err = serve(call)
	var need *resource.ConnectRequired
	if !errors.As(err, &need) || need.IsError() {
		t.Fatalf("first call: %v", err)
	}
	res := need.Result()
	link := res.InputRequests["connect-third"].Params.URL
	if !strings.HasPrefix(link, h.url("/connect/third?ref=")) || res.RequestState == "" {
		t.Fatalf("elicitation %+v", res)
	}

	// The user opens the link: signs in, confirms, authorizes at the provider.
	b := newBrowser(t, h)
	login := location(t, b.do(link))
	back := location(t, b.do(login.String()))
	resp := b.do(back.String())
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("connect page: %d %s", resp.StatusCode, body)
	}
	form := url.Values{"action": {"connect"}}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	req, _ := http.NewRequest(http.MethodPost, h.url("/connect/third"), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	az := location(t, resp)
	if resp := b.do(location(t, b.do(az.String())).String()); resp.StatusCode != http.StatusOK {
		t.Fatalf("connect callback: %d", resp.StatusCode)
	}

	// The host retries with the state; the tool gets the provider's token.
	call.RequestState = res.RequestState
	call.InputResponses = []byte(`{"connect-third":{"action":"accept"}}`)
	tok, err := serve(call)
	issued, _ := vt.state()
	if err != nil || len(issued) == 0 || tok.AccessToken != issued[0] {
		t.Fatalf("retry: %+v, %v", tok, err)
	}
	if _, err := serve(call); !errors.Is(err, requeststate.ErrReplayed) {
		t.Fatalf("the same state again: %v", err)
	}
}
