package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const delegationPolicy = `{"default": ["mcp:tools"],
 "delegation": {"default": {"max_depth": 2},
                "tools": {"deploy": {"forbid": true},
                          "search": {"require": true, "actors": ["tool-agent"]}}}}`

// act builds a nested "act" claim, current actor first.
func act(subs ...string) map[string]any {
	var a map[string]any
	for i := len(subs) - 1; i >= 0; i-- {
		n := map[string]any{"sub": subs[i]}
		if a != nil {
			n["act"] = a
		}
		a = n
	}
	return a
}

// TestDelegationPolicy: per-tool rules require or forbid delegation, name
// the actors allowed and bound the chain; the handler and the audit event
// see the chain.
func TestDelegationPolicy(t *testing.T) {
	t.Parallel()
	policy, err := resource.ParsePolicy([]byte(delegationPolicy))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *resource.Config) { c.Policy = policy })
	for _, tt := range []struct {
		name   string
		act    map[string]any
		tool   string
		status int
		reason string
	}{
		{"not delegated, ordinary tool", nil, "read_file", 200, ""},
		{"delegated once, ordinary tool", act("planner"), "read_file", 200, ""},
		{"delegated twice, ordinary tool", act("tool-agent", "planner"), "read_file", 200, ""},
		{"chain over the default depth", act("c", "b", "a"), "read_file", 403, "delegation chain too long for this operation"},
		{"forbidden tool, delegated", act("planner"), "deploy", 403, "delegated tokens may not call this operation"},
		{"forbidden tool, not delegated", nil, "deploy", 200, ""},
		{"required tool, not delegated", nil, "search", 403, "only delegated tokens may call this operation"},
		{"required tool, right actor", act("tool-agent", "planner"), "search", 200, ""},
		{"required tool, other actor", act("planner", "tool-agent"), "search", 403, "actor not allowed for this operation"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := f.token(func(c *oauthtest.AccessToken) {
				if tt.act != nil {
					c.Extra = map[string]any{"act": tt.act}
				}
			})
			rec, s := f.serve(mcpPost(tok, toolCall(tt.tool)))
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			events := f.events.all()
			last := events[len(events)-1]
			if tt.status == 200 {
				if got := len(s.info.Actors); got != strings.Count(mustJSON(t, tt.act), "sub") || s.info.Delegated() != (got > 0) {
					t.Errorf("handler saw %d actors", got)
				}
				if tt.act != nil && s.info.Actors[0].Subject != tt.act["sub"] {
					t.Errorf("current actor = %q", s.info.Actors[0].Subject)
				}
				return
			}
			if !errors.Is(last.Err, resource.ErrDelegation) || last.Reason != tt.reason || len(last.Actors) == 0 && tt.act != nil {
				t.Errorf("event = %+v", last)
			}
			if rec.Header().Get("WWW-Authenticate") != "" {
				t.Error("a delegation refusal carries a challenge")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestActClaimStrict: a malformed or too deep "act" makes the token
// invalid, whatever the policy.
func TestActClaimStrict(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	deep := act(strings.Split(strings.Repeat("x,", oauthmeta.MaxActorDepth+1)+"y", ",")...)
	for name, v := range map[string]any{
		"act not an object":  "planner",
		"act without sub":    map[string]any{"iss": "x"},
		"nested without sub": map[string]any{"sub": "a", "act": map[string]any{}},
		"too deep":           deep,
	} {
		t.Run(name, func(t *testing.T) {
			tok := f.token(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"act": v} })
			rec, s := f.serve(mcpPost(tok, ""))
			if rec.Code != http.StatusUnauthorized || s.count() != 0 {
				t.Fatalf("status %d", rec.Code)
			}
			if ch := bearerChallenge(t, rec); ch.Value("error_description") != "act claim is malformed" {
				t.Errorf("challenge = %+v", ch)
			}
		})
	}
}

// TestParseDelegationPolicy: contradictory or out-of-range rules are
// configuration errors.
func TestParseDelegationPolicy(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"delegation": {"default": {"require": true, "forbid": true}}}`,
		`{"delegation": {"default": {"max_depth": -1}}}`,
		`{"delegation": {"default": {"max_depth": 99}}}`,
		`{"delegation": {"tools": {"": {}}}}`,
		`{"delegation": {"tools": {"x": {"actors": [""]}}}}`,
		`{"delegation": {"default": {"maxdepth": 1}}}`,
	} {
		if _, err := resource.ParsePolicy([]byte(doc)); !errors.Is(err, resource.ErrInvalidConfig) {
			t.Errorf("%s: err = %v", doc, err)
		}
	}
}

// A server lets delegated tokens search, but only the tool agent, and
// never deploy.
func ExampleDelegationPolicy() {
	policy, err := resource.ParsePolicy([]byte(`{"default": ["mcp:tools"],
	 "delegation": {"default": {"max_depth": 3},
	                "tools": {"deploy": {"forbid": true},
	                          "search": {"actors": ["tool-agent"]}}}}`))
	if err != nil {
		panic(err)
	}
	_, err = resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com", JWKSURI: "https://auth.example.com/jwks.json"}},
		Policy:   policy,
	})
	if err != nil {
		panic(err)
	}
}

// TestIntrospectedActors: an introspection answer's "act" gives the chain
// too, checked by the same rules.
func TestIntrospectedActors(t *testing.T) {
	t.Parallel()
	as := introspectionAS(t)
	f := newFixture(t, func(c *resource.Config) {
		c.Introspection = &resource.IntrospectionConfig{
			Endpoint: as.URL + "/introspect", ClientID: "rs-client", ClientSecret: "s3cret",
			HTTPClient: as.Client(),
		}
	})
	answer := func(act any) map[string]any {
		return map[string]any{"active": true, "iss": testIssuer, "aud": testResource, "exp": f.clock.Now().Add(time.Hour).Unix(),
			"sub": "user-9", "client_id": "planner", "scope": "mcp:tools", "act": act}
	}
	as.SetIntrospection("opaque-delegated-0123456789", answer(act("tool-agent", "planner")))
	info, err := f.v.Verify(context.Background(), "opaque-delegated-0123456789")
	if err != nil || len(info.Actors) != 2 || info.Actors[0].Subject != "tool-agent" || info.Actors[1].Subject != "planner" {
		t.Fatalf("info %+v, err %v", info, err)
	}
	as.SetIntrospection("opaque-malformed-0123456789", answer(map[string]any{"act": map[string]any{"sub": "x"}}))
	if _, err := f.v.Verify(context.Background(), "opaque-malformed-0123456789"); !errors.Is(err, resource.ErrInvalidToken) {
		t.Fatalf("malformed act: err = %v", err)
	}
}
