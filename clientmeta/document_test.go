package clientmeta

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

func TestValidateClientID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"CIMD-01 https with path", "https://c.example/x.json", true},
		{"CIMD-01 port allowed", "https://c:8443/x.json", true},
		{"CIMD-01 nested path", "https://app.example.com/oauth/client.json", true},
		{"CIMD-01 http refused", "http://c/x.json", false},
		{"CIMD-01 no path", "https://c", false},
		{"CIMD-01 root path", "https://c/", false},
		{"CIMD-01 dot-dot segment", "https://c/a/../x", false},
		{"CIMD-01 dot segment", "https://c/./x", false},
		{"CIMD-01 encoded dot-dot", "https://c/a/%2E%2e/x", false},
		{"CIMD-01 fragment", "https://c/x#f", false},
		{"CIMD-01 empty fragment", "https://c/x#", false},
		{"CIMD-01 userinfo", "https://u:p@c/x", false},
		{"CIMD-01 user only", "https://u@c/x", false},
		{"CIMD-01 query refused", "https://c/x?a=1", false},
		{"CIMD-01 empty query refused", "https://c/x?", false},
		{"uppercase scheme", "HTTPS://c/x", false},
		{"space", "https://c/x y", false},
		{"backslash", `https://c\x`, false},
		{"empty", "", false},
		{"no host", "https:///x", false},
		{"too long", "https://c/" + strings.Repeat("a", 3000), false},
		{"dots inside a segment are fine", "https://c/a..b/x.json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateClientID(tt.id)
			if tt.ok && err != nil {
				t.Fatalf("ValidateClientID(%q) = %v, want nil", tt.id, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidClientID) {
				t.Fatalf("ValidateClientID(%q) = %v, want ErrInvalidClientID", tt.id, err)
			}
		})
	}
}

func TestIsURLClientID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"https://c/x": true, "HTTP://c/x": true, "http://c": true,
		"abc": false, "": false, "https": false, "urn:x": false,
	} {
		if got := IsURLClientID(id); got != want {
			t.Errorf("IsURLClientID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestParseDocument(t *testing.T) {
	t.Parallel()
	const id = "https://c.example/client.json"
	valid := docJSON(id)
	tests := []struct {
		name    string
		body    string
		url     string
		wantErr []error
	}{
		{"valid", valid, id, nil},
		{"CIMD-02 client_id with trailing slash", docJSON(id + "/"), id, []error{ErrInvalidDocument, ErrClientIDMismatch}},
		{"CIMD-02 client_id differs in case", docJSON("https://C.example/client.json"), id, []error{ErrClientIDMismatch}},
		{"CIMD-02 client_id missing", `{"client_name":"x","redirect_uris":["https://c.example/cb"]}`, id, []error{ErrClientIDMismatch}},
		{"CIMD-02 client_name missing", `{"client_id":"` + id + `","redirect_uris":["https://c.example/cb"]}`, id, []error{ErrInvalidDocument}},
		{"CIMD-02 redirect_uris missing", `{"client_id":"` + id + `","client_name":"x"}`, id, []error{ErrInvalidDocument}},
		{"CIMD-02 bad redirect uri", `{"client_id":"` + id + `","client_name":"x","redirect_uris":["javascript:alert(1)"]}`, id, []error{ErrInvalidDocument, ErrInvalidRedirectURI}},
		{"CIMD-03 client_secret", strings.Replace(valid, `{`, `{"client_secret":"s3cret",`, 1), id, []error{ErrInvalidDocument, ErrSharedSecret}},
		{"CIMD-03 client_secret null", strings.Replace(valid, `{`, `{"client_secret":null,`, 1), id, []error{ErrSharedSecret}},
		{"CIMD-03 client_secret_expires_at", strings.Replace(valid, `{`, `{"client_secret_expires_at":0,`, 1), id, []error{ErrSharedSecret}},
		{"CIMD-03 client_secret_basic", strings.Replace(valid, `"none"`, `"client_secret_basic"`, 1), id, []error{ErrSharedSecret}},
		{"CIMD-03 client_secret_post", strings.Replace(valid, `"none"`, `"client_secret_post"`, 1), id, []error{ErrSharedSecret}},
		{"CIMD-03 client_secret_jwt", strings.Replace(valid, `"none"`, `"client_secret_jwt"`, 1), id, []error{ErrSharedSecret}},
		{"CIMD-03 private_key_jwt without keys", strings.Replace(valid, `"none"`, `"private_key_jwt"`, 1), id, []error{ErrInvalidDocument}},
		{"CIMD-03 private_key_jwt with jwks_uri", strings.Replace(valid, `"none"`, `"private_key_jwt","jwks_uri":"https://c.example/jwks.json"`, 1), id, nil},
		{"unknown auth method", strings.Replace(valid, `"none"`, `"tls_client_auth"`, 1), id, []error{ErrInvalidDocument}},
		{"response_types without code", strings.Replace(valid, `["code"]`, `["token"]`, 1), id, []error{ErrInvalidDocument}},
		{"logo_uri over http", strings.Replace(valid, `{`, `{"logo_uri":"http://c.example/logo.png",`, 1), id, []error{ErrInvalidDocument}},
		{"duplicate member", strings.Replace(valid, `{`, `{"client_name":"other",`, 1), id, []error{ErrInvalidDocument}},
		{"case-variant member ignored, not matched", strings.Replace(valid, `"client_name"`, `"Client_Name"`, 1), id, []error{ErrInvalidDocument}},
		{"array", `[` + valid + `]`, id, []error{ErrInvalidDocument}},
		{"not JSON", `<html>`, id, []error{ErrInvalidDocument}},
		{"empty", ``, id, []error{ErrInvalidDocument}},
		{"invalid client_id URL even if equal", docJSON("http://c.example/client.json"), "http://c.example/client.json", []error{ErrInvalidClientID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := ParseDocument([]byte(tt.body), tt.url)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ParseDocument: %v", err)
				}
				if doc.ClientID != tt.url {
					t.Fatalf("client_id = %q", doc.ClientID)
				}
				return
			}
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want errors.Is %v", err, want)
				}
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks document content: %v", err)
			}
		})
	}
}

func TestDocumentGolden(t *testing.T) {
	t.Parallel()
	const id = "https://c.example/client.json"
	doc, err := ParseDocument([]byte(docJSON(id)), id)
	if err != nil {
		t.Fatal(err)
	}
	golden.JSON(t, "document.json", doc)
	if doc.AuthMethod() != "none" || !doc.LocalhostOnly() {
		t.Fatalf("AuthMethod = %q, LocalhostOnly = %v", doc.AuthMethod(), doc.LocalhostOnly())
	}
}

func TestCheckRedirectURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uri string
		ok  bool
	}{
		{"https://app.example.com/cb", true},
		{"http://127.0.0.1:3000/callback", true},
		{"http://127.0.0.1/callback", true},
		{"http://[::1]:8080/cb", true},
		{"http://localhost:3000/cb", true},
		{"com.example.app:/oauth2redirect", true},
		{"cursor://anysphere.cursor-mcp/oauth/callback", true},
		{"https://app.example.com/cb?x=1", true},
		{"http://app.example.com/cb", false},
		{"https://app.example.com/cb#frag", false},
		{"https://user@app.example.com/cb", false},
		{"javascript:alert(1)", false},
		{"data:text/html,hi", false},
		{"file:///etc/passwd", false},
		{"vbscript:x", false},
		{"/relative/cb", false},
		{"", false},
		{"https:///cb", false},
		{"https://a b/cb", false},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			t.Parallel()
			err := CheckRedirectURI(tt.uri)
			if tt.ok != (err == nil) {
				t.Fatalf("CheckRedirectURI(%q) = %v, want ok=%v", tt.uri, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidRedirectURI) {
				t.Fatalf("err = %v, want ErrInvalidRedirectURI", err)
			}
		})
	}
}

func TestLocalhostOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		uris []string
		want bool
	}{
		{"loopback only", []string{"http://127.0.0.1:1/cb", "http://localhost/cb"}, true},
		{"one public", []string{"http://127.0.0.1:1/cb", "https://app.example/cb"}, false},
		{"private-use scheme", []string{"com.example:/cb"}, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := LocalhostOnly(tt.uris); got != tt.want {
				t.Fatalf("LocalhostOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestJWKSCasesDocument runs the shared JWK Set table
// (oauthtest.JWKSCases) through a document's inline "jwks": a set the JWK
// Set rule refuses for its shape or for private or symmetric key material
// makes the document invalid; a well-formed set of public keys is kept for
// the verifier to judge (refused by the authorization server when no key
// is usable), and a set the parser accepts is accepted. Rows that are not
// a JSON value cannot be embedded in a document.
func TestJWKSCasesDocument(t *testing.T) {
	t.Parallel()
	const id = "https://client.example.com/pk.json"
	for _, tt := range oauthtest.JWKSCases(t) {
		if !json.Valid(tt.JWKS) {
			continue
		}
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			doc := `{"client_id":"` + id + `","client_name":"C","redirect_uris":["https://client.example.com/cb"],` +
				`"token_endpoint_auth_method":"private_key_jwt","jwks":` + string(tt.JWKS) + `}`
			_, err := ParseDocument([]byte(doc), id)
			if tt.Refused && !tt.Unusable {
				if !errors.Is(err, ErrInvalidDocument) {
					t.Fatalf("ParseDocument = %v; want ErrInvalidDocument", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDocument: %v", err)
			}
		})
	}
}

// TestDocumentJWKS: an inline "jwks" must be a JWK Set whose members are
// JSON objects without private or symmetric key material; the keys
// themselves are not parsed, so a set of unusable public keys passes.
func TestDocumentJWKS(t *testing.T) {
	t.Parallel()
	const id = "https://client.example.com/pk.json"
	const ec = `{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}`
	tests := []struct {
		name, jwks string
		wantErr    string // "" when the document is valid
	}{
		{"public EC key", `{"keys":[` + ec + `]}`, ""},
		{"empty set", `{"keys":[]}`, ""},
		{"unknown key type", `{"keys":[{"kty":"XYZ"}]}`, ""},
		{"encryption key", `{"keys":[{"kty":"EC","use":"enc"}]}`, ""},
		{"no keys member", `{}`, "jwks is not a JWK Set"},
		{"keys member in another case", `{"Keys":[` + ec + `]}`, "jwks is not a JWK Set"},
		{"keys not an array", `{"keys":{}}`, "jwks is not a JWK Set"},
		{"member not an object", `{"keys":[` + ec + `,"key"]}`, "jwks is not a JWK Set"},
		{"null member", `{"keys":[null]}`, "jwks is not a JWK Set"},
		{"array", `[` + ec + `]`, "jwks is not a JWK Set"},
		{"private EC key", `{"keys":[` + strings.Replace(ec, `"kty"`, `"d":"AA","kty"`, 1) + `]}`, "private or symmetric key"},
		{"lone RSA prime", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","p":"AQAB"}]}`, "private or symmetric key"},
		{"symmetric key", `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`, "private or symmetric key"},
		{"oct key without k", `{"keys":[` + ec + `,{"kty":"oct"}]}`, "private or symmetric key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := `{"client_id":"` + id + `","client_name":"C","redirect_uris":["https://client.example.com/cb"],` +
				`"token_endpoint_auth_method":"private_key_jwt","jwks":` + tt.jwks + `}`
			_, err := ParseDocument([]byte(doc), id)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseDocument: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidDocument) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseDocument = %v; want ErrInvalidDocument saying %q", err, tt.wantErr)
			}
		})
	}
}
