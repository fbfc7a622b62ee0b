package resource_test

import (
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// FuzzParseRateLimit: a rate-limit document is refused with
// ErrInvalidConfig or accepted, and an accepted one is accepted by New
// too: never a panic, never a limit of zero or NaN that New would take.
func FuzzParseRateLimit(f *testing.F) {
	f.Add([]byte(`{"identity":{"per_second":5,"burst":20},"tools":{"search":{"per_second":0.2,"burst":3}}}`))
	f.Add([]byte(`{"methods":{"tools/list":{"per_second":1,"burst":1}},"max_tracked":10}`))
	f.Add([]byte(`{"identity":{"per_second":1e309,"burst":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rl, err := resource.ParseRateLimit(data)
		if err != nil {
			if !errors.Is(err, resource.ErrInvalidConfig) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		for _, r := range append([]resource.Rate{rl.Identity}, mapValues(rl.Methods, rl.Tools)...) {
			if r != (resource.Rate{}) && (!(r.PerSecond > 0) || r.Burst < 1) {
				t.Fatalf("accepted rate %+v", r)
			}
		}
		key := oauthtest.NewKey(t, oauthtest.ES256, "k")
		if _, err := resource.New(resource.Config{Resource: testResource, RateLimit: rl,
			Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k", Public: key.Public()}}}}}); err != nil {
			t.Fatalf("accepted limits refused by New: %v", err)
		}
	})
}

func mapValues(ms ...map[string]resource.Rate) []resource.Rate {
	var out []resource.Rate
	for _, m := range ms {
		for _, r := range m {
			out = append(out, r)
		}
	}
	return out
}
