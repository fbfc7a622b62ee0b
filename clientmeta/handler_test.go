package clientmeta

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

func validDocument(id string) *Document {
	return &Document{
		ClientID: id,
		ClientMetadata: oauthmeta.ClientMetadata{
			ClientName:              "Example MCP Client",
			RedirectURIs:            []string{"http://127.0.0.1:3000/callback"},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		},
	}
}

// TestHandlerServes covers requirement CIMD-12: the client hosts its
// document with cache headers, and an authorization server's resolver
// accepts what it serves.
func TestHandlerServes(t *testing.T) {
	t.Parallel()
	h, err := NewHandler(HandlerConfig{Document: validDocument(testID)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/oauth/client.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Header().Get("Cache-Control") != "public, max-age=3600" || rec.Header().Get("ETag") == "" {
		t.Fatalf("response %d %v", rec.Code, rec.Header())
	}
	if _, err := ParseDocument(rec.Body.Bytes(), testID); err != nil {
		t.Fatalf("served document does not parse: %v", err)
	}

	cond := httptest.NewRequest(http.MethodGet, "/oauth/client.json", nil)
	cond.Header.Set("If-None-Match", rec.Header().Get("ETag"))
	rec2 := httptest.NewRecorder()
	h.ServeHTTP(rec2, cond)
	if rec2.Code != http.StatusNotModified || rec2.Body.Len() != 0 {
		t.Fatalf("conditional GET: %d", rec2.Code)
	}
	if h2 := rec2.Header(); h2.Get("ETag") != rec.Header().Get("ETag") || h2.Get("Cache-Control") != "public, max-age=3600" ||
		h2.Get("Content-Type") != "" || h2.Get("Content-Length") != "" {
		t.Fatalf("conditional GET headers: %v", h2)
	}
	// A weak validator and a list naming the ETag match as well (RFC 9110
	// §13.1.2: If-None-Match compares weakly); another ETag does not.
	for inm, want := range map[string]int{
		"W/" + rec.Header().Get("ETag"):        http.StatusNotModified,
		`"other", ` + rec.Header().Get("ETag"): http.StatusNotModified,
		"*":                                    http.StatusNotModified,
		`"other"`:                              http.StatusOK,
	} {
		req := httptest.NewRequest(http.MethodGet, "/oauth/client.json", nil)
		req.Header.Set("If-None-Match", inm)
		r := httptest.NewRecorder()
		h.ServeHTTP(r, req)
		if r.Code != want {
			t.Errorf("If-None-Match %s: %d, want %d", inm, r.Code, want)
		}
	}

	rec3 := httptest.NewRecorder()
	h.ServeHTTP(rec3, httptest.NewRequest(http.MethodPost, "/oauth/client.json", nil))
	if rec3.Code != http.StatusMethodNotAllowed || rec3.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d", rec3.Code)
	}

	rec4 := httptest.NewRecorder()
	h.ServeHTTP(rec4, httptest.NewRequest(http.MethodHead, "/oauth/client.json", nil))
	if rec4.Code != http.StatusOK || rec4.Body.Len() != 0 {
		t.Fatalf("HEAD: %d, %d bytes", rec4.Code, rec4.Body.Len())
	}
	if got, want := rec4.Header().Get("Content-Length"), strconv.Itoa(rec.Body.Len()); got != want ||
		rec4.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("HEAD: Content-Length %q (want %q), Content-Type %q", got, want, rec4.Header().Get("Content-Type"))
	}

	tg := newTarget(t, h)
	r, _ := NewResolver(tg.config(newClock()))
	if _, err := r.Resolve(context.Background(), testID); err != nil {
		t.Fatalf("resolving the hosted document: %v", err)
	}
}

// TestHandlerRefusesInvalid: CIMD-12, the library validates its own document
// against CIMD-01 to CIMD-03 and refuses to serve a bad one.
func TestHandlerRefusesInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(d *Document)
		wantErr error
	}{
		{"CIMD-01 http client_id", func(d *Document) { d.ClientID = "http://c.example/c.json" }, ErrInvalidClientID},
		{"CIMD-01 client_id without path", func(d *Document) { d.ClientID = "https://c.example" }, ErrInvalidClientID},
		{"CIMD-01 client_id with fragment", func(d *Document) { d.ClientID = "https://c.example/c.json#x" }, ErrInvalidClientID},
		{"CIMD-02 no client_name", func(d *Document) { d.ClientName = "" }, ErrInvalidDocument},
		{"CIMD-02 no redirect_uris", func(d *Document) { d.RedirectURIs = nil }, ErrInvalidDocument},
		{"CIMD-03 client_secret_post", func(d *Document) { d.TokenEndpointAuthMethod = "client_secret_post" }, ErrSharedSecret},
		{"CIMD-03 client_secret_basic", func(d *Document) { d.TokenEndpointAuthMethod = "client_secret_basic" }, ErrSharedSecret},
		{"javascript redirect", func(d *Document) { d.RedirectURIs = []string{"javascript:alert(1)"} }, ErrInvalidRedirectURI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := validDocument(testID)
			tt.mutate(d)
			if _, err := NewHandler(HandlerConfig{Document: d}); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if _, err := NewHandler(HandlerConfig{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("nil document: err = %v", err)
	}
	if _, err := NewHandler(HandlerConfig{Document: validDocument(testID), MaxAge: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative MaxAge: err = %v", err)
	}
}
