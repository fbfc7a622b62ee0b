//go:build e2e

package main

import (
	"context"
	"errors"
	"html"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

var (
	anyForm  = regexp.MustCompile(`(?s)<form([^>]*)>(.*?)</form>`)
	formAttr = regexp.MustCompile(`action="([^"]*)"`)
	anyInput = regexp.MustCompile(`<input([^>]*)>`)
	nameAttr = regexp.MustCompile(`name="([^"]+)"`)
	valAttr  = regexp.MustCompile(`value="([^"]*)"`)
)

// deviceAtProvider plays the user at oidc-provider's own device flow:
// from verification_uri_complete through its confirmation page, its
// login (as login) and consent, to its success page. With abort it
// aborts on the confirmation page instead.
func (u *userAgent) deviceAtProvider(provider, complete, login string, abort bool) {
	u.t.Helper()
	resp, body := u.send(http.MethodGet, complete, nil, "")
	for range 20 {
		if loc := resp.Header.Get("Location"); loc != "" {
			next, _ := resp.Request.URL.Parse(loc)
			resp, body = u.send(http.MethodGet, next.String(), nil, "")
			continue
		}
		if strings.Contains(body, "Sign-in Success") || strings.Contains(body, "interrupted") {
			return
		}
		m := anyForm.FindStringSubmatch(body)
		a := formAttr.FindStringSubmatch(m[1])
		if resp.StatusCode != http.StatusOK || m == nil || a == nil {
			u.t.Fatalf("provider page: %d %s", resp.StatusCode, body)
		}
		form := url.Values{}
		for _, in := range anyInput.FindAllStringSubmatch(m[2], -1) {
			n, v := nameAttr.FindStringSubmatch(in[1]), valAttr.FindStringSubmatch(in[1])
			if n == nil {
				continue
			}
			form.Set(n[1], "")
			if v != nil {
				form.Set(n[1], html.UnescapeString(v[1]))
			}
		}
		switch {
		case form.Has("login"):
			form.Set("login", login)
			form.Set("password", "any")
		case form.Has("confirm") || form.Has("xsrf"):
			if abort {
				form.Set("abort", "yes")
			}
		}
		action, _ := resp.Request.URL.Parse(html.UnescapeString(a[1]))
		resp, body = u.send(http.MethodPost, action.String(), form, provider)
	}
	u.t.Fatal("no end of the device flow at the provider")
}

// deviceResource is an MCP endpoint protected by package resource with
// oidc-provider as its authorization server.
func deviceResource(t *testing.T, issuer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcpURL := "http://" + ln.Addr().String() + "/mcp"
	v, err := resource.New(resource.Config{Resource: mcpURL, Issuers: []resource.Issuer{{Issuer: issuer}},
		ScopesSupported: []string{"mcp:tools"}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	v.Mount(mux, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close(); v.Close() })
	return mcpURL
}

// TestE2EDeviceClientOIDCProvider: mcpauth's client against panva
// oidc-provider's own device flow (RFC 8628): the code is shown, the user
// confirms and logs in at the provider, the client polls for the token
// (a JWT for the resource, RFC 8707), and the MCP server accepts it;
// then a user who aborts gets the client access_denied.
func TestE2EDeviceClientOIDCProvider(t *testing.T) {
	t.Parallel()
	op := startOIDCProvider(t, func(string) (string, string) { return "http://127.0.0.1:1/callback", "unused" }, "OIDC_DEVICE=1")
	mcpURL := deviceResource(t, op.issuer)
	run := func(abort bool) (error, []*client.DevicePrompt) {
		return deviceCall(t, mcpURL, []client.PreRegisteredClient{{Issuer: op.issuer, ClientID: "device-client"}},
			func(p *client.DevicePrompt) {
				newUserAgent(t).deviceAtProvider(op.issuer, p.VerificationURIComplete, "alice", abort)
			})
	}
	err, prompts := run(false)
	if err != nil || len(prompts) != 1 {
		t.Fatalf("device login at oidc-provider: %v, %d prompts", err, len(prompts))
	}
	t.Logf("oidc-provider %s: user code %s at %s", op.issuer, prompts[0].UserCode, prompts[0].VerificationURI)
	if err, _ := run(true); !errors.Is(err, client.ErrAuthorization) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied}) {
		t.Fatalf("aborted at the provider: %v", err)
	}
}

// deviceCall calls the MCP server at mcpURL with a client that logs in
// with the device flow only, the user doing approve at each prompt.
func deviceCall(t *testing.T, mcpURL string, pre []client.PreRegisteredClient, approve func(*client.DevicePrompt)) (error, []*client.DevicePrompt) {
	t.Helper()
	var prompts []*client.DevicePrompt
	c, err := client.New(client.Config{
		Device: &client.DeviceFlow{Show: func(_ context.Context, p *client.DevicePrompt) error {
			prompts = append(prompts, p)
			approve(p)
			return nil
		}},
		PreRegistered:             pre,
		InsecureAllowHTTPLoopback: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := c.Transport(mcpURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.HTTPClient().Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
	}
	return err, prompts
}

// TestE2EDeviceBrokerOIDCProvider: our device flow with `mcpauth
// authserver --device --upstream` in front of oidc-provider: the user
// types nothing (verification_uri_complete), approves on our consent page,
// logs in at the provider, comes back through our callback to our "device
// connected" page, and the client's poll gets a token for the upstream
// user; a user the allow-list refuses ends the device's login with
// access_denied.
func TestE2EDeviceBrokerOIDCProvider(t *testing.T) {
	t.Parallel()
	var as *proc
	readyIssuer := regexp.MustCompile(`\(issuer (\S+)\)`)
	op := startOIDCProvider(t, func(issuer string) (string, string) {
		as = startProcEnv(t, []string{"E2E_IDP_SECRET=interop-secret"}, "authserver", "--addr", "127.0.0.1:0",
			"--insecure-http", "--device", "--scopes", "mcp:tools", "--upstream", issuer, "--upstream-client-id", "mcpauth",
			"--upstream-client-secret", "env:E2E_IDP_SECRET", "--upstream-scopes", "openid email profile groups",
			"--allow-user", "alice")
		m := readyIssuer.FindStringSubmatch(as.ready)
		if m == nil {
			t.Fatalf("ready line %q", as.ready)
		}
		return m[1] + "/upstream/callback", "interop-secret"
	})
	issuer := strings.TrimSuffix(readyIssuer.FindStringSubmatch(as.ready)[1], "/")
	mcpURL := deviceResource(t, issuer)
	login := func(user string) func(*client.DevicePrompt) {
		return func(p *client.DevicePrompt) {
			u := newUserAgent(t)
			resp, body := u.send(http.MethodGet, p.VerificationURIComplete, nil, "")
			form := url.Values{}
			for _, m := range anyInput.FindAllStringSubmatch(body, -1) {
				if n, v := nameAttr.FindStringSubmatch(m[1]), valAttr.FindStringSubmatch(m[1]); n != nil && v != nil {
					form.Set(n[1], html.UnescapeString(v[1]))
				}
			}
			if resp.StatusCode != http.StatusOK || form.Get("user_code") != p.UserCode {
				t.Fatalf("verification page: %d %s", resp.StatusCode, body)
			}
			resp, body = u.send(http.MethodPost, issuer+"/device", form, issuer)
			consent := url.Values{"action": {"approve"}}
			for _, m := range hiddenInput.FindAllStringSubmatch(body, -1) {
				consent.Set(m[1], html.UnescapeString(m[2]))
			}
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, p.UserCode) {
				t.Fatalf("consent page: %d %s", resp.StatusCode, body)
			}
			resp, body = u.send(http.MethodPost, issuer+"/consent", consent, issuer)
			back := u.atProvider(op.issuer, resp.Header.Get("Location"), user, issuer+"/upstream/callback")
			resp, body = u.send(http.MethodGet, back, nil, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("callback: %d %s", resp.StatusCode, body)
			}
		}
	}
	if err, prompts := deviceCall(t, mcpURL, nil, login("alice")); err != nil || len(prompts) != 1 {
		t.Fatalf("device login through the broker: %v", err)
	}
	if err, _ := deviceCall(t, mcpURL, nil, login("mallory")); !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied}) {
		t.Fatalf("refused user: %v", err)
	}
}
