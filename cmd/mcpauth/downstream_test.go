package main

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

func TestDownstreamFlags(t *testing.T) {
	const rs = "--client=id=rs,secret=s,grant=urn:ietf:params:oauth:grant-type:token-exchange"
	base := []string{"--insecure-http", "--scopes", "mcp:read cal:read cal:write mail:read", rs}
	tests := []struct {
		name    string
		args    []string
		wantErr string // in the flags' error, or "config" for authserver.New's
		check   func(*testing.T, []authserver.DownstreamAPI)
	}{
		{"none", base, "", func(t *testing.T, apis []authserver.DownstreamAPI) {
			if apis != nil {
				t.Errorf("apis %+v", apis)
			}
		}},
		{"two APIs", append(base, "--downstream-api", "https://cal.example.com/api?v=1=cal:read,cal:write",
			"--downstream-api", "https://mail.example.com/api=mail:read", "--downstream-client", "rs=https://mcp.example.com/mcp",
			"--downstream-token-ttl", "2m"), "", func(t *testing.T, apis []authserver.DownstreamAPI) {
			if len(apis) != 2 || apis[0].Resource != "https://cal.example.com/api?v=1" ||
				!slices.Equal(apis[0].Scopes, []string{"cal:read", "cal:write"}) || apis[1].Resource != "https://mail.example.com/api" ||
				apis[1].Clients["rs"] != "https://mcp.example.com/mcp" || apis[1].TokenTTL != 2*time.Minute {
				t.Errorf("apis %+v", apis)
			}
		}},
		{"no scope", append(base, "--downstream-api", "https://cal.example.com/api=", "--downstream-client", "rs=https://mcp.example.com/mcp"),
			"URI=SCOPE", nil},
		{"no scope at all", append(base, "--downstream-api", "https://cal.example.com/api=,", "--downstream-client", "rs=https://mcp.example.com/mcp"),
			"names no scope", nil},
		{"no client", append(base, "--downstream-api", "https://cal.example.com/api=cal:read"), "--downstream-client", nil},
		{"client without API", append(base, "--downstream-client", "rs=https://mcp.example.com/mcp"), "needs --downstream-api", nil},
		{"bad client", append(base, "--downstream-api", "https://cal.example.com/api=cal:read", "--downstream-client", "rs"),
			"ID=RESOURCE", nil},
		{"scope not served", append(base, "--downstream-api", "https://cal.example.com/api=cal:delete",
			"--downstream-client", "rs=https://mcp.example.com/mcp"), "config", nil},
		{"client without the grant", append(base, "--client=id=other,secret=s", "--downstream-api", "https://cal.example.com/api=cal:read",
			"--downstream-client", "other=https://mcp.example.com/mcp"), "config", nil},
		{"TTL beyond the token TTL", append(base, "--downstream-api", "https://cal.example.com/api=cal:read",
			"--downstream-client", "rs=https://mcp.example.com/mcp", "--downstream-token-ttl", "1h"), "config", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := authserverConfig(t, tc.args)
			if wantConfigErr(t, err, tc.wantErr) {
				tc.check(t, cfg.DownstreamAPIs)
			}
		})
	}
}
