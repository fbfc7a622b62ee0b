package main

import (
	"io"
	"net"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// TestWorkloadFlags: --workload-rule, --trusted-issuer-discovery and the
// --delegation flags reach the configuration, and authserver.New accepts
// it; malformed values are errors.
func TestWorkloadFlags(t *testing.T) {
	t.Parallel()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}
	good := []string{"--insecure-http", "--scopes", "mcp:read mcp:write",
		"--trusted-issuer", "https://k8s.example.com=https://k8s.example.com/keys",
		"--workload-rule", "issuer=https://k8s.example.com,sub=system:serviceaccount:tools:*,claim=kubernetes.io/namespace=tools,resource=https://mcp.example.com/mcp,scope=mcp:read",
		"--trusted-issuer-discovery", "https://token.actions.githubusercontent.com",
		"--workload-rule", "issuer=https://token.actions.githubusercontent.com,claim=repository=acme/deployer,claim=ref=refs/heads/main,resource=https://deploy.example.com/mcp,scope=mcp:write",
		"--delegation", "--delegation-max-depth", "3", "--delegation-may-act", "host-app=planner-agent"}
	f, err := parseAuthserverFlags(good, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.TrustedIssuers) != 2 || len(cfg.TrustedIssuers[0].Rules) != 1 || !cfg.TrustedIssuers[1].Discover ||
		cfg.TrustedIssuers[1].Rules[0].Claims["ref"] != "refs/heads/main" ||
		cfg.TrustedIssuers[0].Rules[0].Claims["kubernetes.io/namespace"] != "tools" {
		t.Fatalf("trusted issuers = %+v", cfg.TrustedIssuers)
	}
	if cfg.Delegation == nil || cfg.Delegation.MaxDepth != 3 || cfg.Delegation.MayAct["host-app"].Subject != "planner-agent" {
		t.Fatalf("delegation = %+v", cfg.Delegation)
	}
	as, err := authserver.New(cfg)
	if err != nil {
		t.Fatalf("authserver.New: %v", err)
	}
	_ = as.Close()

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"rule for an untrusted issuer", []string{"--workload-rule", "issuer=https://x,sub=a,resource=https://m,scope=s"}, "is not a --trusted-issuer"},
		{"rule without issuer", []string{"--workload-rule", "sub=a,resource=https://m,scope=s"}, "issuer= is required"},
		{"rule with an unknown key", []string{"--workload-rule", "issuer=https://x,subject=a"}, "unknown key"},
		{"claim without pattern", []string{"--workload-rule", "issuer=https://x,claim=repository"}, "NAME=PATTERN"},
		{"delegation flags without --delegation", []string{"--delegation-max-depth", "2"}, "need --delegation"},
		{"may-act malformed", []string{"--delegation", "--delegation-may-act", "host"}, "HOLDER=ACTOR"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(append([]string{"--insecure-http"}, tt.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.config(addr, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
