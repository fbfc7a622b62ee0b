package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"testing"
)

func TestVaultFlags(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	k2 := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	getenv := func(k string) string { return map[string]string{"K1": k1, "K2": k2, "SHORT": "AAAA"}[k] }
	up := []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--allow-any-user"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		keys    int
	}{
		{"no vault flags", up, "", 0},
		{"two keys", append(up, "--vault-key", "env:K1", "--vault-key", "env:K2", "--upstream-audience", "github",
			"--exchange-client", "rs=https://mcp.example.com/mcp"), "", 2},
		{"literal key", append(up, "--vault-key", k1), "env:VAR", 0},
		{"empty env", append(up, "--vault-key", "env:NOPE"), "NOPE is empty", 0},
		{"short key", append(up, "--vault-key", "env:SHORT"), "32 random bytes", 0},
		{"bad exchange client", append(up, "--exchange-client", "rs"), "ID=RESOURCE", 0},
		{"without upstream", []string{"--vault-key", "env:K1"}, "need --upstream", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			u, err := f.upstream.config(false, getenv)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.vault.config(u, getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if err != nil && strings.Contains(err.Error(), k1) {
					t.Error("the error shows the key")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c == nil || len(c.Keys) != tc.keys {
				t.Fatalf("config %+v", c)
			}
			if tc.keys == 2 && (c.Keys[0][0] != 1 || c.Keys[1][0] != 2 || c.Audience != "github" ||
				c.ResourceServers["rs"] != "https://mcp.example.com/mcp") {
				t.Errorf("config %+v", c)
			}
		})
	}
}
