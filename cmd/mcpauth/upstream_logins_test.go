package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// TestSeveralUpstreamFlags: --upstream NAME=PROVIDER,KEY=VALUE,... given
// more than once configures several providers, each by the rules of the
// single-provider flags, and --upstream-realm their home realms; a
// mixture with the single-provider form, a setting outside a provider's
// value, an unknown setting and a bad home realm are refused, the last
// when the server starts.
func TestSeveralUpstreamFlags(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"GH_SECRET": "s3cret"}[k] }
	corp := "corp=http://127.0.0.1:9/idp,client-id=mcp,allow-email-domain=corp.example,label=Corp SSO"
	gh := "gh=github,client-id=Iv1,client-secret=env:GH_SECRET,allow-user=583231,github-org=acme,authorization-url=http://127.0.0.1:9/login/oauth/authorize"
	base := []string{"--insecure-http", "--upstream", corp, "--upstream", gh}

	f, err := parseAuthserverFlags(append(base, "--upstream-realm", "corp.example=corp", "--exchange-client", "rs=https://mcp.example/mcp"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := authserver.Config{}
	if err := f.severalLogins(&cfg, nil, getenv); err != nil {
		t.Fatal(err)
	}
	defer closeLogin(&cfg)
	scfg := cfg // the server's readiness checks, one per provider; no vault
	scfg.Issuer, scfg.InsecureAllowHTTPLoopback, scfg.Vault, scfg.VaultResourceServers = "http://127.0.0.1:9/as", true, nil, nil
	as, err := authserver.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	if checks := as.ReadyChecks(); len(checks) != 2 || checks[0].Name != "upstream corp" || checks[1].Name != "upstream gh" ||
		checks[1].Check(t.Context()) != nil { // the github preset's endpoint needs no discovery
		t.Errorf("readiness checks %+v", checks)
	}
	if len(cfg.Logins) != 2 || cfg.Logins[0].Name != "corp" || cfg.Logins[0].Label != "Corp SSO" ||
		cfg.Logins[0].Login.Issuer() != "http://127.0.0.1:9/idp" || cfg.Logins[1].Login.Issuer() != "https://github.com" ||
		cfg.Logins[0].Allow.EmailDomains[0] != "corp.example" || cfg.Logins[1].Allow.Users[0] != "583231" ||
		cfg.HomeRealms["corp.example"] != "corp" || cfg.Vault == nil || cfg.VaultResourceServers["rs"] == "" {
		t.Fatalf("config %+v", cfg)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"named and unnamed", []string{"--upstream", corp, "--upstream", "github"}, "each is NAME=PROVIDER"},
		{"two unnamed", []string{"--upstream", "github", "--upstream", "google"}, "NAME=PROVIDER"},
		{"setting outside", append(base, "--allow-any-user"), "inside its value"},
		{"client id outside", append(base, "--upstream-client-id", "x"), "inside its value"},
		{"unknown setting", []string{"--upstream", corp + ",colour=blue", "--upstream", gh}, "unknown setting"},
		{"prefixed setting", []string{"--upstream", corp + ",upstream-tenant=x", "--upstream", gh}, "unknown setting"},
		{"nested upstream", []string{"--upstream", corp + ",upstream=github", "--upstream", gh}, "unknown setting"},
		{"realm inside", []string{"--upstream", corp + ",realm=corp.example=corp", "--upstream", gh}, "unknown setting"},
		{"value missing", []string{"--upstream", corp + ",client-id", "--upstream", gh}, "needs a value"},
		{"no provider", []string{"--upstream", "corp=client-id=x", "--upstream", gh}, "want corp=PROVIDER"},
		{"no allow-list", []string{"--upstream", "corp=http://127.0.0.1:9/idp,client-id=mcp", "--upstream", gh}, "say who may log in"},
		{"literal secret", []string{"--insecure-http", "--upstream", corp, "--upstream", "gh=github,client-id=x,client-secret=s,allow-any-user"}, "env:VAR"},
		{"realm without several", []string{"--upstream", "github", "--upstream-realm", "corp.example=gh"}, "needs several"},
		{"realm not a pair", append(base, "--upstream-realm", "corp.example"), "DOMAIN=NAME"},
		{"realm twice", append(base, "--upstream-realm", "corp.example=corp", "--upstream-realm", "corp.example=gh"), "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg := authserver.Config{}
			if f.upstream.several() {
				err = f.severalLogins(&cfg, nil, getenv)
			} else {
				_, err = f.upstream.config(true, getenv)
			}
			if err == nil {
				closeLogin(&cfg)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
	for _, realm := range []string{"corp.example.=corp", "*.corp.example=corp", "corp.example=okta", "corp=corp"} {
		t.Run("realm "+realm, func(t *testing.T) {
			f, err := parseAuthserverFlags(append(base, "--upstream-realm", realm), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg := authserver.Config{Issuer: "http://127.0.0.1:9000", InsecureAllowHTTPLoopback: true}
			if err := f.severalLogins(&cfg, nil, getenv); err != nil {
				t.Fatal(err)
			}
			defer closeLogin(&cfg)
			if _, err := authserver.New(cfg); !errors.Is(err, authserver.ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
}

// TestSeveralUpstreamConfigFile: in the configuration file "upstream" is
// a list of named providers and "upstream-realm" a list of realms; one
// unnamed "upstream" is the single provider as before.
func TestSeveralUpstreamConfigFile(t *testing.T) {
	file := writeConfig(t, "insecure-http: true\nupstream:\n"+
		"  - corp=http://127.0.0.1:9/idp,client-id=mcp,allow-email-domain=corp.example\n"+
		"  - gh=github,client-id=Iv1,allow-user=583231\n"+
		"upstream-realm:\n  - corp.example=corp\n")
	f, err := parseAuthserverLayers([]string{"--config", file}, io.Discard, layerOptions{getenv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := authserver.Config{}
	if !f.upstream.several() {
		t.Fatalf("--upstream %q not read as several providers", f.upstream.specs)
	}
	if err := f.severalLogins(&cfg, nil, envMap(nil)); err != nil {
		t.Fatal(err)
	}
	defer closeLogin(&cfg)
	if len(cfg.Logins) != 2 || cfg.HomeRealms["corp.example"] != "corp" {
		t.Fatalf("config %+v", cfg)
	}
	single := writeConfig(t, "upstream: https://idp.example\nupstream-client-id: c\nallow-any-user: true\n")
	f, err = parseAuthserverLayers([]string{"--config", single}, io.Discard, layerOptions{getenv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := f.upstream.config(false, envMap(nil)); err != nil || c.Issuer != "https://idp.example" {
		t.Fatalf("single upstream from the file: %+v, %v", c, err)
	}
}
