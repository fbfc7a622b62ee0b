package main

import (
	"strings"
	"testing"
)

// TestCheckIdPFlags: check --idp takes no URL argument and none of the MCP
// server checks' flags; --resource needs --idp.
func TestCheckIdPFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"help", []string{"check", "--help"}, 0, "-idp"},
		{"resource without idp", []string{"check", "--resource", "https://mcp.example/mcp"}, 1, "--resource needs --idp"},
		{"idp and URL", []string{"check", "--idp", "https://as.example", "https://mcp.example/mcp"}, 1, "no URL argument"},
		{"idp with step-up tool", []string{"check", "--idp", "https://as.example", "--step-up-tool", "x"}, 1, "--step-up-tool"},
		{"idp over http", []string{"check", "--idp", "http://as.example"}, 1, "--idp"},
		{"resource over http", []string{"check", "--idp", "https://as.example", "--resource", "http://mcp.example/mcp"}, 1, "--resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, tt.args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.out) {
				t.Fatalf("exit %d, want %d; output %q lacks %q", code, tt.code, out+errOut, tt.out)
			}
		})
	}
}
