//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dpopInteropReport is what tools/interop/dpop.mjs prints.
type dpopInteropReport struct {
	Alg            string           `json:"alg"`
	Thumbprint     string           `json:"thumbprint"`
	TokenType      string           `json:"tokenType"`
	CnfJKT         string           `json:"cnfJkt"`
	MetadataAlgs   []string         `json:"metadataAlgs"`
	Authorizations int              `json:"authorizations"`
	First          dpopInteropRun   `json:"first"`
	Second         dpopInteropRun   `json:"second"`
	AsBearer       dpopInteropProbe `json:"asBearer"`
	OtherKey       dpopInteropProbe `json:"otherKey"`
	WithoutNonce   dpopInteropProbe `json:"withoutNonce"`
}

type dpopInteropRun struct {
	Tools         []string `json:"tools"`
	Echo          string   `json:"echo"`
	TokenRequests []struct {
		Status    int    `json:"status"`
		DPoPProof bool   `json:"dpopProof"`
		Error     string `json:"error"`
		DPoPNonce bool   `json:"dpopNonce"`
	} `json:"tokenRequests"`
	ResourceRequests []struct {
		Method          string `json:"method"`
		Status          int    `json:"status"`
		Scheme          string `json:"scheme"`
		DPoPProof       bool   `json:"dpopProof"`
		WWWAuthenticate string `json:"wwwAuthenticate"`
		DPoPNonce       bool   `json:"dpopNonce"`
	} `json:"resourceRequests"`
}

type dpopInteropProbe struct {
	Status          int    `json:"status"`
	WWWAuthenticate string `json:"wwwAuthenticate"`
	DPoPNonce       bool   `json:"dpopNonce"`
}

// TestE2EInteropTypeScriptDPoP: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned in tools/interop) with its own
// DPoP support (RFC 9449) against `mcpauth authserver --consent auto` and
// `mcpauth protect --dpop required`, with ES256 and EdDSA keys, without
// nonces, with authorization-server nonces (authserver --dpop-nonce) and
// with nonces at both servers (protect --dpop-nonce). The SDK registers,
// authorizes headlessly, gets a DPoP-bound token (cnf.jkt = its key's
// thumbprint), answers each use_dpop_nonce with the nonce it was given,
// and calls echo with a fresh proof per request; a second run reuses the
// token with the same key; the token presented as Bearer, or with another
// key's proof, is refused (RS-18). `make e2e` installs Node 22 and the SDK
// (make interop-tools); without them the test fails rather than skips.
func TestE2EInteropTypeScriptDPoP(t *testing.T) {
	t.Parallel()
	needInteropTools(t, "@modelcontextprotocol/client")
	node, err := filepath.Abs(interopNode)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		alg              string
		asNonce, rsNonce bool
	}{
		{"ES256", "ES256", false, false},
		{"EdDSA", "EdDSA", false, false},
		{"ES256 with authorization-server nonces", "ES256", true, false},
		{"EdDSA with nonces at both servers", "EdDSA", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t)
			asArgs := []string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--consent", "auto", "--scopes", "mcp:tools"}
			if tc.asNonce {
				asArgs = append(asArgs, "--dpop-nonce")
			}
			as := startProc(t, asArgs...)
			issuer := firstURL.FindStringSubmatch(as.ready)[1]
			rsArgs := []string{"protect", "--addr", "127.0.0.1:0", "--upstream", up.srv.URL + "/mcp", "--issuer", issuer,
				"--insecure-http", "--scopes", "mcp:tools", "--require", "mcp:tools", "--dpop", "required"}
			if tc.rsNonce {
				rsArgs = append(rsArgs, "--dpop-nonce")
			}
			rs := startProc(t, rsArgs...)
			mcpURL := firstURL.FindStringSubmatch(rs.ready)[1] + "/mcp"

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "dpop.mjs", mcpURL, tc.alg)
			cmd.Dir = interopDir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("dpop.mjs: %v\nstdout: %s\nstderr: %s\nprotect: %s", err, stdout.String(), stderr.String(), rs.stderr.String())
			}
			var r dpopInteropReport
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("report: %v: %s", err, stdout.String())
			}
			t.Logf("report: %s", bytes.TrimSpace(stdout.Bytes()))
			for _, c := range checkDPoPInterop(r, tc.alg, tc.asNonce, tc.rsNonce) {
				if !c.ok {
					t.Errorf("%s: no", c.name)
				}
			}
			if jwtPattern.MatchString(stderr.String()) || jwtPattern.MatchString(stdout.String()) {
				t.Error("a token or proof in the script's output")
			}
		})
	}
}

type interopCheck struct {
	name string
	ok   bool
}

// checkDPoPInterop lists what a dpop.mjs report must show.
func checkDPoPInterop(r dpopInteropReport, alg string, asNonce, rsNonce bool) []interopCheck {
	run1, run2 := r.First, r.Second
	everyTokenRequestProves := len(run1.TokenRequests) > 0
	for _, tr := range run1.TokenRequests {
		everyTokenRequestProves = everyTokenRequestProves && tr.DPoPProof
	}
	asNonceRetry := len(run1.TokenRequests) == 1 && run1.TokenRequests[0].Status == 200
	if asNonce {
		tr := run1.TokenRequests
		asNonceRetry = len(tr) == 2 && tr[0].Status == 400 && tr[0].Error == "use_dpop_nonce" && tr[0].DPoPNonce && tr[1].Status == 200
	}
	// Every request that carried a token used the DPoP scheme with a proof
	// and was answered: 200 or 202, or 405 for the GET that opens an event
	// stream (the upstream is stateless). No use_dpop_nonce challenge:
	// protect sends a DPoP-Nonce with its first 401 (no token yet), and the
	// SDK puts it in its first proof.
	presented := func(run dpopInteropRun) bool {
		n := 0
		for _, rr := range run.ResourceRequests {
			if rr.Scheme == "" {
				continue
			}
			n++
			answered := rr.Status == 200 || rr.Status == 202 || rr.Method == "GET" && rr.Status == 405
			if rr.Scheme != "DPoP" || !rr.DPoPProof || !answered {
				return false
			}
		}
		return n > 0
	}
	rsNonceSent := false
	for _, rr := range run1.ResourceRequests {
		rsNonceSent = rsNonceSent || rr.DPoPNonce
	}
	withoutNonce := r.WithoutNonce.Status == 200
	if rsNonce {
		withoutNonce = r.WithoutNonce.Status == 401 && r.WithoutNonce.DPoPNonce &&
			strings.Contains(r.WithoutNonce.WWWAuthenticate, `error="use_dpop_nonce"`)
	}
	refusedAsBound := func(p dpopInteropProbe) bool {
		return p.Status == 401 && strings.HasPrefix(p.WWWAuthenticate, "DPoP ") && strings.Contains(p.WWWAuthenticate, `error="invalid_token"`)
	}
	return []interopCheck{
		{"the SDK signed with the asked algorithm", r.Alg == alg},
		{"the authorization server advertises the algorithm", slices.Contains(r.MetadataAlgs, alg)},
		{"one authorization in all", r.Authorizations == 1},
		{"every token request carried a proof", everyTokenRequestProves},
		{"the token endpoint's nonce challenge answered once, only when nonces are on", asNonceRetry},
		{"a DPoP token bound to the SDK's key", strings.EqualFold(r.TokenType, "DPoP") && r.CnfJKT != "" && r.CnfJKT == r.Thumbprint},
		{"first run: tools listed and echo answered", slices.Contains(run1.Tools, "echo") && run1.Echo == "first run"},
		{"first run: the token went with the DPoP scheme and a proof, every request answered", presented(run1)},
		{"protect sent a DPoP-Nonce only when nonces are on", rsNonceSent == rsNonce},
		{"RFC 9449 §9: a proof without protect's nonce is refused only when nonces are on", withoutNonce},
		{"second run: no new token request", len(run2.TokenRequests) == 0},
		{"second run: echo answered with the saved token and key", run2.Echo == "second run" && presented(run2)},
		{"RS-18: the bound token presented as Bearer is refused", refusedAsBound(r.AsBearer)},
		{"RFC 9449 §6: the token with another key's proof is refused", refusedAsBound(r.OtherKey)},
	}
}
