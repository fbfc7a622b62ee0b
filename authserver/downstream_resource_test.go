package authserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/resource"
)

// TestDownstreamAtResourceServer runs the whole chain on loopback: an MCP
// server (package resource, with an Exchanger) whose tool calls the
// calendar API (package resource too, configured for calendarAPI) with a
// token from the exchange. The API accepts that token and sees the user
// and the acting MCP server; it refuses the MCP token itself (no
// passthrough), and the MCP server refuses the API's token. After the
// grant is revoked, the tool's exchange fails with 401.
func TestDownstreamAtResourceServer(t *testing.T) {
	h := newHarness(t, "", downstreamConfig)
	verifier := func(res string) *resource.Verifier {
		v, err := resource.New(resource.Config{
			Resource: res, Issuers: []resource.Issuer{{Issuer: h.issuer}}, InsecureAllowHTTPLoopback: true, Now: h.clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = v.Close() })
		return v
	}

	apiV := verifier(calendarAPI)
	api := httptest.NewServer(apiV.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := resource.TokenInfoFromContext(r.Context())
		var c struct {
			Act struct {
				Sub string `json:"sub"`
			} `json:"act"`
		}
		_ = json.Unmarshal(ti.Claims, &c)
		fmt.Fprintf(w, "%s %s %s %s", ti.Subject, ti.ClientID, c.Act.Sub, strings.Join(ti.Scopes, ","))
	})))
	t.Cleanup(api.Close)

	mcpV := verifier(rsResource)
	ex, err := resource.NewExchanger(resource.ExchangeConfig{
		TokenEndpoint: h.url(pathToken), ClientID: rsID, ClientSecret: rsSecret, InsecureAllowHTTPLoopback: true, Now: h.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	var exchanged string
	tool := httptest.NewServer(mcpV.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("the tool handler sees the MCP token")
		}
		tok, err := ex.ExchangeResource(r.Context(), calendarAPI, "cal:read")
		if err != nil {
			mcpV.DenyExchange(w, r, err)
			return
		}
		exchanged = tok.AccessToken
		status, body := call(t, api.URL, tok.TokenType+" "+tok.AccessToken)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})))
	t.Cleanup(tool.Close)

	mcp := mcpToken(h, rsResource, "mcp:read cal:read")
	if status, body := call(t, tool.URL, "Bearer "+mcp.AccessToken); status != http.StatusOK ||
		body != defaultSubject+" "+rsID+" "+rsID+" cal:read" {
		t.Fatalf("tool: %d %q", status, body)
	}
	if status, _ := call(t, api.URL, "Bearer "+mcp.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("the MCP token at the API: %d, want 401", status)
	}
	if status, _ := call(t, tool.URL, "Bearer "+exchanged); status != http.StatusUnauthorized {
		t.Errorf("the API's token at the MCP server: %d, want 401", status)
	}
	if st := h.revoke(t, mcp.RefreshToken, nil, "", ""); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	// The MCP server verifies JWTs locally, so the revoked MCP token still
	// reaches the tool; the exchange is refused and the client told to
	// log in again.
	if status, _ := call(t, tool.URL, "Bearer "+mcp.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("tool after revocation: %d, want 401", status)
	}
}

// call sends GET url with the Authorization header authz.
func call(t *testing.T, url, authz string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", authz)
	resp, err := (&http.Client{Transport: ownTransport(t), Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(b)
}
