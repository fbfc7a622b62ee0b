package resource_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// TestConfigRefusals covers RS-23, RS-24 and the fail-closed configuration
// rules.
func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	keys := keyset.Static{{ID: "k", Public: oauthtest.NewKey(t, oauthtest.ES256, "k").Public()}}
	base := func() resource.Config {
		return resource.Config{Resource: testResource, Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keys}}}
	}
	tests := []struct {
		name   string
		mutate func(*resource.Config)
	}{
		{"RS-24 plain http resource", func(c *resource.Config) { c.Resource = "http://mcp.example.com/mcp" }},
		{"RS-24 plain http loopback without the insecure switch", func(c *resource.Config) { c.Resource = "http://127.0.0.1:8080/mcp" }},
		{"RS-23 offline_access advertised", func(c *resource.Config) { c.ScopesSupported = []string{"mcp:tools", "offline_access"} }},
		{"RS-23 offline_access required by the policy", func(c *resource.Config) {
			c.Policy = &resource.Policy{Tools: map[string][]string{"x": {"offline_access"}}}
		}},
		{"no resource", func(c *resource.Config) { c.Resource = "" }},
		{"resource with a fragment", func(c *resource.Config) { c.Resource = testResource + "#x" }},
		{"resource with a query", func(c *resource.Config) { c.Resource = testResource + "?x=1" }},
		{"no issuers", func(c *resource.Config) { c.Issuers = nil }},
		{"issuer with a query", func(c *resource.Config) { c.Issuers[0].Issuer = testIssuer + "?x" }},
		{"issuer twice", func(c *resource.Config) { c.Issuers = append(c.Issuers, c.Issuers[0]) }},
		{"alg none", func(c *resource.Config) { c.Algorithms = []string{"none"} }},
		{"HS256", func(c *resource.Config) { c.Algorithms = []string{"HS256"} }},
		{"empty allowlist", func(c *resource.Config) { c.Algorithms = []string{} }},
		{"negative leeway", func(c *resource.Config) { c.Leeway = -1 }},
		{"huge leeway", func(c *resource.Config) { c.Leeway = resource.MaxLeeway + 1 }},
		{"bad origin", func(c *resource.Config) { c.AllowedOrigins = []string{"https://a.example/path"} }},
		{"invalid scope", func(c *resource.Config) { c.ScopesSupported = []string{"a b"} }},
		{"introspection without credentials", func(c *resource.Config) {
			c.Introspection = &resource.IntrospectionConfig{Endpoint: "https://auth.example.com/introspect"}
		}},
		{"introspection over http", func(c *resource.Config) {
			c.Introspection = &resource.IntrospectionConfig{Endpoint: "http://auth.example.com/introspect", ClientID: "a", ClientSecret: "b"}
		}},
		{"negative cache size", func(c *resource.Config) { c.Cache.MaxEntries = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := base()
			tt.mutate(&cfg)
			if _, err := resource.New(cfg); !errors.Is(err, resource.ErrInvalidConfig) {
				t.Errorf("New error = %v, want ErrInvalidConfig", err)
			}
		})
	}
	t.Run("RS-24 loopback http with the insecure switch", func(t *testing.T) {
		t.Parallel()
		cfg := base()
		cfg.Resource = "http://127.0.0.1:8080/mcp"
		cfg.InsecureAllowHTTPLoopback = true
		if _, err := resource.New(cfg); err != nil {
			t.Errorf("New: %v", err)
		}
	})
}

// TestAuditAndLogs covers RS-24 (no token in logs) and the audit hook: one
// event per decision.
func TestAuditAndLogs(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	f := newFixture(t, func(c *resource.Config) {
		c.Policy = testPolicy()
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	valid := f.token(nil)
	readOnly := f.token(func(c *oauthtest.AccessToken) { c.Scope = "files:read" })
	expired := f.token(func(c *oauthtest.AccessToken) { c.Expiry = f.clock.Now().Add(-time.Hour) })
	f.serve(mcpPost(valid, ""))
	f.serve(mcpPost(readOnly, toolCall("write_file")))
	f.serve(mcpPost(expired, ""))
	f.serve(mcpPost("", ""))
	events := f.events.all()
	want := []resource.Decision{resource.DecisionAllow, resource.DecisionStepUp, resource.DecisionDeny, resource.DecisionDeny}
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d", len(events), len(want))
	}
	for i, e := range events {
		if e.Decision != want[i] {
			t.Errorf("event %d decision %q, want %q", i, e.Decision, want[i])
		}
	}
	if got := events[1].Required; len(got) != 2 || got[1] != "files:write" || events[1].MCPName != "write_file" {
		t.Errorf("step-up event = %+v", events[1])
	}
	if !errors.Is(events[2].Err, resource.ErrExpired) || events[2].Reason != "token expired" || events[2].Status != 401 {
		t.Errorf("deny event = %+v", events[2])
	}
	all := logs.String() + fmt.Sprintf("%+v", events)
	for _, tok := range []string{valid, readOnly, expired} {
		if strings.Contains(all, tok) || strings.Contains(all, tok[len(tok)-20:]) {
			t.Fatal("RS-24: a token appears in the logs or audit events")
		}
	}
	if strings.Count(logs.String(), "\n") != 4 {
		t.Errorf("logs:\n%s", logs.String())
	}
}
