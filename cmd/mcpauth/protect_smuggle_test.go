package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost sends one HTTP/1.1 POST to addr with header lines written exactly
// as given (Go's client would canonicalise their names) and returns the
// answer's status.
func rawPost(t *testing.T, addr, path, body string, lines ...string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", path, addr, len(body))
	for _, l := range lines {
		req.WriteString(l + "\r\n")
	}
	req.WriteString("\r\n" + body)
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestProtectRemovesEverySpelling: a header the proxy sets or removes
// (identity headers, the --pass-upstream-token header, credentials, the
// headers the middleware checks) does not reach the upstream in another
// spelling either, such as X_Forwarded_User, which CGI, WSGI, PHP and many
// Node servers read as X-Forwarded-User (oauth2-proxy GHSA-vjrc-mh2v-45x6,
// CVE-2025-64484). The request is written on the connection as it is, so
// that the names arrive as the caller spelt them; the upstream gets the
// proxy's values, once, and none of the caller's.
func TestProtectRemovesEverySpelling(t *testing.T) {
	t.Parallel()
	f := newPassFixture(t, 0)
	tok := f.token(t)
	addr := strings.TrimPrefix(f.url, "http://")
	spoofed := []string{
		"X_Forwarded_User", "x_forwarded_user", "X_FORWARDED_USER", "x-forwarded_user", "X.Forwarded.User",
		"X-Forwarded_Email", "X_Forwarded_Email", "X_Forwarded_Preferred_Username", "X_Forwarded_Scopes",
		"X_Forwarded_Client_Id", "X_Forwarded_Issuer", "X_Forwarded_For", "X_Forwarded_Host", "X_Forwarded_Proto",
		"X_Forwarded_Access_Token",
		"X_Upstream_Token", "X_UPSTREAM_TOKEN", "x_upstream_token", "X-Upstream_Token", "X.Upstream.Token",
		"X_Auth_Request_User", "x_auth_request_email", "X_Auth_Request_Access_Token",
		"X_Mcpauth_Sub", "X_Remote_User", "Remote_User", "X_Real_IP",
		"Proxy_Authorization", "PROXY_AUTHORIZATION",
		"Mcp_Session_Id", "mcp_session_id", "Mcp_Method", "Mcp_Name", "MCP_Protocol_Version",
		// Dashed spellings in other cases, which net/http canonicalises.
		"x-forwarded-user", "X-UPSTREAM-TOKEN", "x-auth-request-user", "dpop",
	}
	for i, name := range spoofed {
		t.Run(name, func(t *testing.T) {
			f.mu.Lock()
			n := len(f.seen)
			f.mu.Unlock()
			mark := fmt.Sprintf("mallory-%d", i)
			status := rawPost(t, addr, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
				"Authorization: Bearer "+tok, name+": "+mark, "X_Request_Id: kept-"+mark)
			if status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.seen) != n+1 {
				t.Fatalf("upstream saw %d requests, want %d", len(f.seen), n+1)
			}
			got := f.seen[n].Header
			for k, vs := range got {
				for _, v := range vs {
					if v == mark {
						t.Errorf("the caller's %s reached the upstream as %s: %s", name, k, v)
					}
				}
			}
			for k, want := range map[string]string{headerUser: "alice", headerScopes: "mcp:tools", headerClientID: "cli",
				"X-Upstream-Token": "gh-upstream-token", "X-Forwarded-For": "127.0.0.1"} {
				if vs := got.Values(k); len(vs) != 1 || vs[0] != want {
					t.Errorf("upstream %s = %q, want %q", k, vs, want)
				}
			}
			// A header the proxy neither sets nor removes passes, underscore
			// and all.
			if vs := got["X_request_id"]; len(vs) != 1 || vs[0] != "kept-"+mark {
				t.Errorf("upstream X_Request_Id = %q, want it forwarded", vs)
			}
		})
	}
}
