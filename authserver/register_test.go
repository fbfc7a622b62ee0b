package authserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// postJSON sends a registration request.
func (h *harness) postJSON(path, body string) (*http.Response, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url(path), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// register registers a client that must be accepted.
func (h *harness) register(t testing.TB, body string) *oauthmeta.ClientInformation {
	t.Helper()
	resp, b := h.postJSON(pathRegister, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	info, err := oauthmeta.ParseClientInformation(b)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestRegistration covers requirements AS-16 and AS-17.
func TestRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	tests := []struct {
		name       string
		body       string
		wantSecret bool
		appType    string
	}{
		{"AS-16 native public client", `{"client_name":"CLI","redirect_uris":["http://127.0.0.1:8765/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"application_type":"native"}`, false, "native"},
		{"AS-16 web confidential client", `{"client_name":"Web","redirect_uris":["https://app.example.com/cb"],"application_type":"web"}`, true, "web"},
		{"AS-16 application_type inferred native", `{"redirect_uris":["http://localhost:3000/cb"],"token_endpoint_auth_method":"none"}`, false, "native"},
		{"AS-16 application_type inferred web", `{"redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"client_secret_post"}`, true, "web"},
		{"AS-16 native with private-use scheme", `{"redirect_uris":["com.example.app:/cb"],"token_endpoint_auth_method":"none","application_type":"native"}`, false, "native"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := h.postJSON(pathRegister, tt.body)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			info, err := oauthmeta.ParseClientInformation(body)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(info.ClientID, "https://") || strings.HasPrefix(info.ClientID, "http://") {
				t.Fatalf("AS-17: minted client_id %q looks like a URL", info.ClientID)
			}
			if (info.ClientSecret != "") != tt.wantSecret || info.ApplicationType != tt.appType {
				t.Fatalf("info %+v", info)
			}
			var raw map[string]any
			_ = json.Unmarshal(body, &raw)
			if _, ok := raw["client_secret_expires_at"]; ok != tt.wantSecret {
				t.Fatalf("client_secret_expires_at present=%v with secret=%v", ok, tt.wantSecret)
			}
			if info.ClientIDIssuedAt != h.clock.Now().Unix() {
				t.Fatalf("client_id_issued_at = %d", info.ClientIDIssuedAt)
			}
		})
	}
}

// TestRegistrationRejected covers requirement AS-16's validation:
// application_type honoured, bad metadata refused with RFC 7591 codes.
func TestRegistrationRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	tests := []struct {
		name string
		body string
		want oauthmeta.ErrorCode
	}{
		{"AS-16 web client with localhost redirect", `{"redirect_uris":["http://localhost:3000/cb"],"application_type":"web"}`, oauthmeta.CodeInvalidRedirectURI},
		{"AS-16 web client with custom scheme", `{"redirect_uris":["com.example:/cb"],"application_type":"web"}`, oauthmeta.CodeInvalidRedirectURI},
		{"AS-16 unknown application_type", `{"redirect_uris":["https://a.example.com/cb"],"application_type":"desktop"}`, oauthmeta.CodeInvalidClientMetadata},
		{"no redirect_uris", `{"client_name":"x"}`, oauthmeta.CodeInvalidRedirectURI},
		{"http redirect to a public host", `{"redirect_uris":["http://app.example.com/cb"]}`, oauthmeta.CodeInvalidRedirectURI},
		{"javascript redirect", `{"redirect_uris":["javascript:alert(1)"]}`, oauthmeta.CodeInvalidRedirectURI},
		{"implicit grant", `{"redirect_uris":["https://a.example.com/cb"],"grant_types":["implicit"]}`, oauthmeta.CodeInvalidClientMetadata},
		{"token response type", `{"redirect_uris":["https://a.example.com/cb"],"response_types":["token"]}`, oauthmeta.CodeInvalidClientMetadata},
		{"private_key_jwt", `{"redirect_uris":["https://a.example.com/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks_uri":"https://a.example.com/jwks"}`, oauthmeta.CodeInvalidClientMetadata},
		{"http logo", `{"redirect_uris":["https://a.example.com/cb"],"logo_uri":"http://a.example.com/l.png"}`, oauthmeta.CodeInvalidClientMetadata},
		{"not JSON", `client_name=x`, oauthmeta.CodeInvalidClientMetadata},
		{"JSON array", `[]`, oauthmeta.CodeInvalidClientMetadata},
		{"duplicate member", `{"redirect_uris":["https://a.example.com/cb"],"redirect_uris":["https://b.example.com/cb"]}`, oauthmeta.CodeInvalidClientMetadata},
		{"wrong type", `{"redirect_uris":"https://a.example.com/cb"}`, oauthmeta.CodeInvalidClientMetadata},
		{"too large", `{"client_name":"` + strings.Repeat("a", defaultMaxBodyBytes) + `"}`, oauthmeta.CodeInvalidClientMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := h.postJSON(pathRegister, tt.body)
			e, err := oauthmeta.ParseError(body)
			if resp.StatusCode != http.StatusBadRequest || err != nil || e.Code != tt.want {
				t.Fatalf("status %d %s, want 400 %s", resp.StatusCode, body, tt.want)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, h.url(pathRegister), strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("text/plain: %d", resp.StatusCode)
	}
}

// TestRegisteredClientFlow: AS-16, a dynamically registered client runs the
// whole flow, confidential ones with their issued secret; AS-17, every
// minted id is a random non-URL string.
func TestRegisteredClientFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	info := h.register(t, `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"client_secret_basic","application_type":"native"}`)
	q, v := authParams(info.ClientID, "http://127.0.0.1:4444/cb")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {h.code(q, v)}, "code_verifier": {v}, "redirect_uri": {"http://127.0.0.1:4444/cb"}}
	res := h.token(form, info.ClientID, info.ClientSecret)
	if res.status != http.StatusOK || res.tok.RefreshToken == "" {
		t.Fatalf("%d %s", res.status, res.body)
	}
	seen := map[string]bool{}
	for range 20 {
		id := h.register(t, `{"redirect_uris":["https://a.example.com/cb"],"token_endpoint_auth_method":"none"}`).ClientID
		if seen[id] || !strings.HasPrefix(id, dynamicClientIDPrefix) || len(id) < 20 {
			t.Fatalf("AS-17: client_id %q", id)
		}
		seen[id] = true
	}
}
