package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// writeConfig writes a configuration file into a temporary directory.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpauth.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// envMap is a getenv over a map.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestConfigPrecedence: a key takes its value from the flag, else its
// environment variable, else the file, else the default; a list from a
// higher layer replaces the lower one whole.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	file := writeConfig(t, "scopes: file:scope\nresource:\n  - https://file.example/a\n  - https://file.example/b\ntoken-ttl: 7m\n")
	tests := []struct {
		name                string
		args                []string
		env                 map[string]string
		scopes, ttl         string
		resources           []string
		scopeSrc, resourceS string
	}{
		{"defaults only", nil, nil, "mcp:read mcp:write", "15m0s", nil, "default", "default"},
		{"file", []string{"--config", file}, nil, "file:scope", "7m0s", []string{"https://file.example/a", "https://file.example/b"}, "file " + file + ":1", "file " + file + ":2"},
		{"environment over file", []string{"--config", file},
			map[string]string{"MCPAUTH_SCOPES": "env:scope", "MCPAUTH_RESOURCE": "https://env.example/1\nhttps://env.example/2", "MCPAUTH_TOKEN_TTL": ""},
			"env:scope", "7m0s", []string{"https://env.example/1", "https://env.example/2"}, "env MCPAUTH_SCOPES", "env MCPAUTH_RESOURCE"},
		{"flag over environment and file", []string{"--config", file, "--scopes", "flag:scope", "--resource", "https://flag.example", "--token-ttl", "2m"},
			map[string]string{"MCPAUTH_SCOPES": "env:scope", "MCPAUTH_RESOURCE": "https://env.example/1"},
			"flag:scope", "2m0s", []string{"https://flag.example"}, "flag", "flag"},
		{"config file from the environment", nil, map[string]string{"MCPAUTH_CONFIG": file},
			"file:scope", "7m0s", []string{"https://file.example/a", "https://file.example/b"}, "file " + file + ":1", "file " + file + ":2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverLayers(tc.args, io.Discard, layerOptions{getenv: envMap(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			if f.scopes != tc.scopes || f.tokenTTL.String() != tc.ttl || !slices.Equal(f.resources, tc.resources) {
				t.Errorf("scopes %q ttl %s resources %q, want %q %s %q", f.scopes, f.tokenTTL, f.resources, tc.scopes, tc.ttl, tc.resources)
			}
			v := f.ops.view
			if got := v.byName["scopes"].source; got != tc.scopeSrc {
				t.Errorf("scopes source %q, want %q", got, tc.scopeSrc)
			}
			if got := v.byName["resource"].source; got != tc.resourceS {
				t.Errorf("resource source %q, want %q", got, tc.resourceS)
			}
		})
	}
}

// TestConfigRefused: unknown keys, secrets written in the file and values
// of the wrong shape are refused, naming the key and its line.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, command, content, want string
	}{
		{"unknown key", "authserver", "scopes: a\nscopse: b\n", `:2: unknown key "scopse"`},
		{"config in the file", "authserver", "config: other.yaml\n", `:1: unknown key "config"`},
		{"literal key", "authserver", "key-encryption-key: BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n", ":1: key-encryption-key: a secret may not be written"},
		{"literal client secret", "authserver", "client:\n  - id=a,redirect=http://127.0.0.1/cb\n  - id=b,secret=hunter2\n", ":3: client: secret=: a secret may not be written"},
		{"literal upstream secret", "authserver", "upstream-client-secret: hunter2\n", "upstream-client-secret: a secret may not be written"},
		{"database password", "authserver", "database-url: postgres://u:pw@db/x\n", "database-url: the URL holds a password"},
		{"database password parameter", "authserver", "database-url: postgres://db/x?password=pw\n", "the URL holds a password"},
		{"literal session key", "protect", "session-key: 0123456789abcdef0123456789abcdef\n", "session-key: a secret may not be written"},
		{"literal introspection secret", "protect", "introspect-client: rs:hunter2\n", "the SECRET of ID:SECRET"},
		{"literal connect secret", "authserver", "connect-client-secret: [github=hunter2]\n", "the SECRET of NAME=SECRET"},
		{"list for a single value", "authserver", "\n\nscopes: [a, b]\n", `:3: key "scopes" takes one value, not a list`},
		{"mapping value", "authserver", "resource: {a: b}\n", `:1: key "resource": want a value or a list`},
		{"no value", "authserver", "issuer:\n", `:1: key "issuer" has no value`},
		{"twice", "authserver", "scopes: a\nscopes: b\n", `:2: key "scopes" given twice`},
		{"bad value", "authserver", "token-ttl: soon\n", `:1: invalid value "soon" for token-ttl`},
		{"nested unknown", "protect", "issuer:\n  - value: https://a.example\n    issuer-profle: okta\n", `:3: unknown key "issuer-profle"`},
		{"nested without value", "protect", "issuer:\n  - issuer-profile: okta\n", `:2: an entry of "issuer" written as a mapping needs a "value"`},
		{"not a mapping", "authserver", "- a\n- b\n", "want a mapping"},
		{"not YAML", "authserver", "a: [b\n", "--config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.content)
			var err error
			opts := layerOptions{getenv: envMap(nil)}
			args := []string{"--config", path}
			if tc.command == "protect" {
				_, err = parseProtectLayers(append(args, "--upstream", "http://127.0.0.1:1/mcp", "--issuer", "https://as.example"), io.Discard, opts)
			} else {
				_, err = parseAuthserverLayers(args, io.Discard, opts)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "BwcHBwc") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

// TestConfigSecretsAllowed: references, URLs without a password and
// literals outside the file pass.
func TestConfigSecretsAllowed(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "key-encryption-key: env:KEK\nold-key-encryption-key: [file:/run/secrets/old]\n"+
		"database-url: postgres://mcpauth@db.internal/mcpauth?sslmode=verify-full\nredis-url: env:REDIS\n"+
		"client:\n  - id=a,secret=file:/run/secrets/a,redirect=http://127.0.0.1/cb\nconnect-client-secret: [github=env:GH_SECRET]\n")
	f, err := parseAuthserverLayers([]string{"--config", path, "--dpop-nonce-key", "literal-on-the-command-line"}, io.Discard,
		layerOptions{getenv: envMap(map[string]string{"MCPAUTH_VAULT_KEY": "literal-in-the-environment"})})
	if err != nil {
		t.Fatal(err)
	}
	if f.keyEncryptionKey != "env:KEK" || f.dpopNonceKey != "literal-on-the-command-line" || len(f.vault.keys) != 1 {
		t.Fatalf("flags %q %q %q", f.keyEncryptionKey, f.dpopNonceKey, f.vault.keys)
	}
}

// TestPrintConfig: every key with its value and source, secrets
// redacted, references shown.
func TestPrintConfig(t *testing.T) {
	path := writeConfig(t, "scopes: mcp:a mcp:b\nclient:\n  - id=a,secret=env:A_SECRET,redirect=http://127.0.0.1/cb\nkey-encryption-key: env:KEK\n")
	t.Setenv("MCPAUTH_DATABASE_URL", "postgres://u:topsecret@db/x")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"authserver", "--config", path, "--print-config", "--dpop-nonce-key", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==",
		"--client", "id=b,secret=literal,redirect=http://127.0.0.1/cb", "--no-cimd"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		`scopes: "mcp:a mcp:b"  # file ` + path + `:1`,
		`key-encryption-key: "env:KEK"  # file ` + path + `:4`,
		`database-url: "postgres://u:REDACTED@db/x"  # env MCPAUTH_DATABASE_URL`,
		`dpop-nonce-key: "REDACTED"  # flag`,
		"client:  # flag\n  - \"id=b,secret=REDACTED,redirect=http://127.0.0.1/cb\"\n",
		`no-cimd: "true"  # flag`,
		`addr: "127.0.0.1:9000"  # default`,
		`trusted-issuer: []  # default`,
		`upstream-client-secret: ""  # default`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"topsecret", "literal", "c2VjcmV0"} {
		if strings.Contains(out, secret) {
			t.Errorf("output shows the secret %q", secret)
		}
	}
	all, err := parseAuthserverLayers(nil, io.Discard, layerOptions{getenv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.ops.view.keys) < 50 {
		t.Errorf("only %d keys", len(all.ops.view.keys))
	}
	for _, s := range all.ops.view.keys {
		if !strings.Contains(out, "\n"+s.name+":") {
			t.Errorf("output lacks the key %s", s.name)
		}
	}
}

// TestConfigNestedIssuers: per-issuer flags written under their issuer
// apply to it.
func TestConfigNestedIssuers(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "issuer:\n  - https://a.example\n  - value: https://b.example\n    issuer-profile: okta\n    issuer-audience: [api://x, api://y]\n")
	f, err := parseProtectLayers([]string{"--config", path, "--upstream", "http://127.0.0.1:1/mcp"}, io.Discard, layerOptions{getenv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.issuerOpts.list) != 2 {
		t.Fatalf("issuers %v", f.issuers)
	}
	a, b := f.issuerOpts.list[0], f.issuerOpts.list[1]
	if a.url != "https://a.example" || a.profile.Preset != "" || b.url != "https://b.example" || b.profile.Preset != "okta" ||
		!slices.Equal(b.profile.Audiences, []string{"api://x", "api://y"}) {
		t.Fatalf("issuers %+v %+v", a, b)
	}
	// The command line's issuers replace the file's, with their nested keys.
	f, err = parseProtectLayers([]string{"--config", path, "--upstream", "http://127.0.0.1:1/mcp", "--issuer", "https://c.example"}, io.Discard, layerOptions{getenv: envMap(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.issuerOpts.list) != 1 || f.issuerOpts.list[0].profile.Preset != "" {
		t.Fatalf("issuers %v", f.issuers)
	}
}

// TestSecretFromFile: file:PATH reads the secret from a file, without its
// final line break.
func TestSecretFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full, empty := filepath.Join(dir, "s"), filepath.Join(dir, "e")
	_ = os.WriteFile(full, []byte("s3cret\n"), 0o600)
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	tests := []struct{ v, want, err string }{
		{"file:" + full, "s3cret", ""},
		{"file:" + empty, "", "is empty"},
		{"file:" + filepath.Join(dir, "none"), "", "--x"},
		{"env:V", "from-env", ""},
		{"plain", "plain", ""},
	}
	for _, tc := range tests {
		got, err := secretValue("--x", tc.v, envMap(map[string]string{"V": "from-env"}))
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("secretValue(%q) = %q, %v", tc.v, got, err)
		}
	}
	if _, err := envSecret("--x", "plain", os.Getenv); err == nil {
		t.Error("envSecret took a literal")
	}
	if got, err := envSecret("--x", "file:"+full, os.Getenv); got != "s3cret" || err != nil {
		t.Errorf("envSecret(file:) = %q, %v", got, err)
	}
}

// TestConfigExamples loads the example files of examples/ as they are,
// then builds the servers' configurations from them with their secret
// and policy files in a temporary directory.
func TestConfigExamples(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"key-encryption-key": testKEKFlag, "upstream-client-secret": "upstream-secret", "session-key": strings.Repeat("k", 32),
		"grant-policy.json": `{"default": ["mcp:read"]}`, "policy.json": `{"default": ["mcp:read"], "tools": {"write": ["mcp:write"]}}`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CI_BOT_SECRET", "ci-bot-secret")
	t.Setenv("VAULT_KEY", testKEKFlag)
	t.Setenv("DATABASE_URL", "postgres://mcpauth@127.0.0.1:1/mcpauth")
	local := func(t *testing.T, example string) string {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", example))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer("/run/secrets/", dir+"/", "/etc/mcpauth/", dir+"/").Replace(string(data))
		return writeConfig(t, s)
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}
	t.Run("authserver", func(t *testing.T) {
		if _, err := parseAuthserverFlags([]string{"--config", "../../examples/authserver.yaml"}, io.Discard); err != nil {
			t.Fatal(err)
		}
		f, err := parseAuthserverFlags([]string{"--config", local(t, "authserver.yaml")}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if f.issuer != "https://auth.example.com" || len(f.clients) != 1 || f.ops.tlsCert == "" || f.ops.adminAddr == "" {
			t.Fatalf("flags %+v", f)
		}
		if _, err := parseKEK("--key-encryption-key", f.keyEncryptionKey); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer closeLogin(&cfg)
		as, err := authserver.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = as.Close()
	})
	t.Run("protect", func(t *testing.T) {
		if _, err := parseProtectFlags([]string{"--config", "../../examples/protect.yaml"}, io.Discard); err != nil {
			t.Fatal(err)
		}
		f, err := parseProtectFlags([]string{"--config", local(t, "protect.yaml")}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		up, _ := url.Parse(f.upstream)
		cfg, err := f.resourceConfig(addr, up, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Issuers) != 2 || cfg.Issuers[1].Profile.Preset != "okta" || cfg.Policy == nil || len(cfg.SessionKey) != 32 {
			t.Fatalf("config %+v", cfg)
		}
	})
}

// TestReloadableKeysExist: every key the reloads name is a flag of its
// command, so a renamed flag cannot silently become restart-only.
func TestReloadableKeysExist(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		keys    map[string]bool
		parse   func() (*configView, error)
	}{
		{"authserver", authserverReloadable, func() (*configView, error) {
			f, err := parseAuthserverLayers(nil, io.Discard, layerOptions{getenv: envMap(nil)})
			if err != nil {
				return nil, err
			}
			return f.ops.view, nil
		}},
		{"protect", protectReloadable, func() (*configView, error) {
			f, err := parseProtectLayers([]string{"--upstream", "http://127.0.0.1:1/", "--issuer", "https://as.example"}, io.Discard, layerOptions{getenv: envMap(nil)})
			if err != nil {
				return nil, err
			}
			return f.ops.view, nil
		}},
	} {
		v, err := tc.parse()
		if err != nil {
			t.Fatal(err)
		}
		for k := range tc.keys {
			if v.byName[k] == nil {
				t.Errorf("%s: reloadable key %q is not a flag", tc.command, k)
			}
		}
		for _, k := range opsKeys {
			if tc.keys[k] || v.byName[k] == nil {
				t.Errorf("%s: %q must be a restart-only key", tc.command, k)
			}
		}
	}
	for name := range secretFlags {
		a, _ := parseAuthserverLayers(nil, io.Discard, layerOptions{getenv: envMap(nil)})
		p, _ := parseProtectLayers([]string{"--upstream", "http://127.0.0.1:1/", "--issuer", "https://as.example"}, io.Discard, layerOptions{getenv: envMap(nil)})
		if a.ops.view.byName[name] == nil && p.ops.view.byName[name] == nil {
			t.Errorf("secret flag %q is no flag of authserver or protect", name)
		}
	}
}

// TestReloadPlan: a reload applies the reloadable keys that changed and
// keeps the restart-only ones at their running values, whether they ran
// from the file or from their defaults.
func TestReloadPlan(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "scopes: mcp:a\nsigning-alg: RS256\n")
	parse := func(pinned map[string]*setting) (*authserverFlags, *configView, error) {
		f, err := parseAuthserverLayers([]string{"--config", path}, io.Discard, layerOptions{getenv: envMap(nil), pinned: pinned})
		if err != nil {
			return nil, nil, err
		}
		return f, f.ops.view, nil
	}
	_, running, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file    string
		ok            bool
		applied       []string
		scopes, alg   string
		addr, consent string
	}{
		{"unchanged", "scopes: mcp:a\nsigning-alg: RS256\n", false, nil, "", "", "", ""},
		{"restart-only keys alone", "scopes: mcp:a\nsigning-alg: ES256\naddr: 127.0.0.1:1\n", false, nil, "", "", "", ""},
		{"both kinds", "scopes: mcp:b\nsigning-alg: ES256\naddr: 127.0.0.1:1\nconsent: deny\n", true, []string{"consent", "scopes"}, "mcp:b", "RS256", "127.0.0.1:9000", "deny"},
		{"a restart-only key removed", "scopes: mcp:c\n", true, []string{"scopes"}, "mcp:c", "RS256", "127.0.0.1:9000", "consent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			logs := &syncBuffer{}
			f, view, applied, ok := reloadPlan(slog.New(slog.NewTextHandler(logs, nil)), running,
				func(k string) bool { return authserverReloadable[k] }, parse)
			if ok != tc.ok || !slices.Equal(applied, tc.applied) {
				t.Fatalf("ok %v applied %q, want %v %q; logs %s", ok, applied, tc.ok, tc.applied, logs.String())
			}
			if !ok {
				return
			}
			if f.scopes != tc.scopes || f.signingAlg != tc.alg || f.addr != tc.addr || f.consent != tc.consent {
				t.Errorf("flags %q %q %q %q", f.scopes, f.signingAlg, f.addr, f.consent)
			}
			if view.byName["signing-alg"].source != running.byName["signing-alg"].source {
				t.Errorf("signing-alg source %q", view.byName["signing-alg"].source)
			}
		})
	}
}
