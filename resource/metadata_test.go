package resource_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// mounted serves a Verifier's Mount on an httptest server, returning the
// server and a function that maps the configured https URLs onto it.
func mounted(t *testing.T, f *fixture) (*httptest.Server, func(string) string) {
	t.Helper()
	mux := http.NewServeMux()
	f.v.Mount(mux, (&seen{}).handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return srv.URL + p.EscapedPath()
	}
}

func get(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestMetadata covers RS-01 and RS-02: the document at the path-inserted
// URL, with the canonical resource, the issuers, the advertised scopes
// (separate from the enforced ones) and header-only bearer tokens.
func TestMetadata(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) {
		c.ScopesSupported = []string{"mcp:tools", "files:read", "files:write"}
		c.Policy = testPolicy()
		c.ResourceName = "Example files"
	})
	_, local := mounted(t, f)
	if f.v.MetadataURL() != testPRM {
		t.Fatalf("MetadataURL = %q", f.v.MetadataURL())
	}
	resp, body := get(t, local(testPRM))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("RS-01: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("headers = %v", resp.Header)
	}
	m, err := oauthmeta.ParseProtectedResourceMetadata(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(testResource, oauthmeta.URLPolicy{}); err != nil {
		t.Errorf("RS-01: the document fails the client's own checks: %v", err)
	}
	golden.JSON(t, "protected_resource_metadata.json", jsonValue(t, body))
	// RS-02: no root document naming the /mcp resource.
	if resp, _ := get(t, local("https://mcp.example.com/.well-known/oauth-protected-resource")); resp.StatusCode != 404 {
		t.Errorf("RS-02: root metadata status %d, want 404", resp.StatusCode)
	}
	for _, method := range []string{http.MethodOptions, http.MethodHead, http.MethodPost} {
		req, _ := http.NewRequest(method, local(testPRM), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := map[string]int{http.MethodOptions: 204, http.MethodHead: 200, http.MethodPost: 405}[method]
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", method, resp.StatusCode, want)
		}
	}
	if got := f.v.Metadata(); got.Resource != testResource || got.ResourceName != "Example files" {
		t.Errorf("Metadata() = %+v", got)
	}
}

// TestMetadataPathInsertion covers RS-02 and RS-03 for a resource with a
// deeper path: the 401 names the path-inserted URL, and following it gives
// a document whose resource is the called URL byte for byte.
func TestMetadataPathInsertion(t *testing.T) {
	t.Parallel()
	const res = "https://mcp.example.com/a/mcp"
	f := newFixture(t, func(c *resource.Config) { c.Resource = "HTTPS://MCP.example.com:443/a/mcp" })
	if f.v.Resource() != res {
		t.Fatalf("Resource() = %q", f.v.Resource())
	}
	_, local := mounted(t, f)
	resp, err := http.Post(local(res), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	chs, err := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	c, _ := oauthmeta.FindChallenge(chs, "bearer")
	pointer := c.Value(oauthmeta.ParamResourceMetadata)
	if pointer != "https://mcp.example.com/.well-known/oauth-protected-resource/a/mcp" {
		t.Fatalf("RS-04: resource_metadata = %q", pointer)
	}
	resp, body := get(t, local(pointer))
	if resp.StatusCode != 200 {
		t.Fatalf("RS-02: %d", resp.StatusCode)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil || doc["resource"] != res {
		t.Errorf("RS-03: resource = %v, want %q byte for byte", doc["resource"], res)
	}
}

// TestMountPatterns checks the ServeMux patterns for unusual paths.
func TestMountPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct{ resource, resPattern, prmPattern string }{
		{"https://h.example", "/{$}", "/.well-known/oauth-protected-resource"},
		{"https://h.example/", "/{$}", "/.well-known/oauth-protected-resource"},
		{"https://h.example/mcp/", "/mcp/{$}", "/.well-known/oauth-protected-resource/mcp"},
		{"https://h.example/x{y}/mcp", "/x%7By%7D/mcp", "/.well-known/oauth-protected-resource/x%7By%7D/mcp"},
	}
	for _, tt := range tests {
		f := newFixture(t, func(c *resource.Config) { c.Resource = tt.resource })
		if got := f.v.ResourcePath(); got != tt.resPattern {
			t.Errorf("%s: ResourcePath = %q, want %q", tt.resource, got, tt.resPattern)
		}
		if got := f.v.MetadataPath(); got != tt.prmPattern {
			t.Errorf("%s: MetadataPath = %q, want %q", tt.resource, got, tt.prmPattern)
		}
		f.v.Mount(http.NewServeMux(), http.NotFoundHandler()) // must not panic
	}
}
