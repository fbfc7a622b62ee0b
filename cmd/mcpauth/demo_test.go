package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// jwtPattern matches anything shaped like a JWS compact token.
var jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.`)

// TestDemoNarration runs `mcpauth demo` in-process to completion and checks
// that each step the issue asks for is told, and that no token, code or
// verifier is printed (RS-24 spirit: credentials never reach output).
func TestDemoNarration(t *testing.T) {
	t.Parallel()
	var stdout, stderr syncBuffer
	code := run(context.Background(), []string{"demo", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	checkDemoNarration(t, out)
}

// checkDemoNarration is shared with the end-to-end test of the binary.
func checkDemoNarration(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{
		"listening on http://127.0.0.1:",
		"<- 401 Unauthorized",
		`WWW-Authenticate: Bearer scope="mcp:tools", resource_metadata="http://127.0.0.1:`,
		"protected resource metadata (RFC 9728): GET http://127.0.0.1:",
		"authorization server's metadata (RFC 8414)",
		"code_challenge_method  S256",
		"client's metadata document https://client.example/mcpauth-demo.json",
		"Consent page: \"mcpauth demo client wants to access your account.\" The demo clicks Approve.",
		"-> identity provider http://127.0.0.1:",
		"-> authorization server http://127.0.0.1:",
		"iss is identical to the issuer recorded before the redirect (RFC 9207)",
		"grant_type=authorization_code",
		"aud        http://127.0.0.1:",
		"scope      mcp:tools\n",
		"echo result: hello from the demo",
		`"subject":"u-`,
		"<- 403 Forbidden",
		`error="insufficient_scope"`,
		"Authorization #2",
		"scope      mcp:tools mcp:admin\n",
		"admin_echo result: STEP-UP WORKS",
		"grant_type=urn:ietf:params:oauth:grant-type:token-exchange",
		"<- 400 invalid_grant with connect_uri",
		"URL-mode elicitation and a sealed requestState",
		"/connect/demo-provider?ref=",
		"host: 127.0.0.1:",
		"The connect page first learns who is at the browser",
		"Confirmation page: \"mcpauth demo client asks to use your Demo Provider account.",
		"-> demo-provider http://127.0.0.1:",
		"/connect/callback",
		"Connect page: 200 OK Your Demo Provider account is connected.",
		"<- 200: the provider's access token, for the MCP server only",
		"list_repos result: 3 repositories at demo-provider",
		"Try it by hand",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("narration lacks %q", want)
		}
	}
	if strings.Contains(out, "demo-provider-token-") || strings.Contains(out, "demo-idp-token-") {
		t.Error("the narration shows a provider's token")
	}
	if jwtPattern.MatchString(out) {
		t.Error("the narration contains a JWT")
	}
	if regexp.MustCompile(`[?&](code|state)=[^…&\s]`).MatchString(out) {
		t.Error("the narration contains a code or state value")
	}
	if t.Failed() {
		t.Logf("narration:\n%s", out)
	}
}
