package main

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestRateLimitFlags: the rate and proxy flags reach the configuration;
// negative, infinite and NaN values, malformed prefixes and an unknown
// header are refused; zero is the default.
func TestRateLimitFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
		rl      authserver.RateLimit
		tp      authserver.TrustedProxies
	}{
		{"defaults", nil, "", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"all", []string{"--rate-per-ip", "50", "--rate-per-client", "5.5", "--rate-burst", "40", "--rate-browser", "4", "--rate-browser-burst", "200",
			"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "2001:db8::/32", "--trusted-proxy", "192.0.2.7", "--trusted-proxy", "2001:db8::1",
			"--trusted-proxy-header", "forwarded"}, "",
			authserver.RateLimit{PerIP: 50, PerClient: 5.5, Burst: 40, PerIPBrowser: 4, BrowserBurst: 200},
			authserver.TrustedProxies{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32"),
				netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("2001:db8::1/128")}, Header: authserver.ProxyHeaderForwarded}},
		{"zero is the default", []string{"--rate-per-ip", "0", "--rate-burst", "0"}, "", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"x-forwarded-for", []string{"--trusted-proxy", "10.0.0.1", "--trusted-proxy-header", "x-forwarded-for"}, "", authserver.RateLimit{},
			authserver.TrustedProxies{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}}},
		{"negative rate", []string{"--rate-per-ip", "-1"}, "--rate-per-ip -1", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"infinite rate", []string{"--rate-browser", "+Inf"}, "--rate-browser +Inf", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"NaN rate", []string{"--rate-per-client", "NaN"}, "--rate-per-client NaN", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"negative burst", []string{"--rate-browser-burst", "-5"}, "--rate-browser-burst -5", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"not a prefix", []string{"--trusted-proxy", "lb.internal"}, "not a CIDR prefix", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"host bits", []string{"--trusted-proxy", "10.1.2.3/8"}, "10.0.0.0/8, or 10.1.2.3/32", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"zone", []string{"--trusted-proxy", "fe80::1%eth0"}, "zone", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"every address", []string{"--trusted-proxy", "0.0.0.0/0"}, "config", authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"unknown header", []string{"--trusted-proxy", "10.0.0.1", "--trusted-proxy-header", "x-real-ip"}, "must be x-forwarded-for or forwarded",
			authserver.RateLimit{}, authserver.TrustedProxies{}},
		{"header without proxy", []string{"--trusted-proxy-header", "forwarded"}, "needs --trusted-proxy", authserver.RateLimit{}, authserver.TrustedProxies{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := authserverConfig(t, append([]string{"--insecure-http"}, tc.args...))
			if !wantConfigErr(t, err, tc.wantErr) {
				return
			}
			if cfg.RateLimit != tc.rl || cfg.TrustedProxies.Header != tc.tp.Header || !slices.Equal(cfg.TrustedProxies.Prefixes, tc.tp.Prefixes) {
				t.Fatalf("RateLimit %+v, TrustedProxies %+v; want %+v, %+v", cfg.RateLimit, cfg.TrustedProxies, tc.rl, tc.tp)
			}
		})
	}
}

// TestAuthserverTrustedProxy runs `mcpauth authserver --trusted-proxy
// 127.0.0.1 --rate-per-ip 1 --rate-burst 2`: requests from 127.0.0.1 (the
// proxy) count by the client their X-Forwarded-For names, each client
// getting two before 429, and requests from 127.0.0.2 (around the proxy)
// count by that address whatever X-Forwarded-For they send. The rate is
// too slow to refill during the test.
func TestAuthserverTrustedProxy(t *testing.T) {
	t.Parallel()
	direct := oauthtest.SourceDialer(t, "127.0.0.2")
	issuer, stop := startAuthserverIssuer(t, "--insecure-http",
		"--trusted-proxy", "127.0.0.1", "--rate-per-ip", "0.001", "--rate-burst", "2")
	viaProxy := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	around := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: direct.DialContext}}
	statuses := func(hc *http.Client, xff func(i int) string, n int) []int {
		var out []int
		for i := range n {
			req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(url.Values{"grant_type": {"password"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-For", xff(i))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			out = append(out, resp.StatusCode)
		}
		return out
	}
	want := []int{401, 401, 429} // no client authentication, then throttled
	for _, client := range []string{"198.51.100.1", "198.51.100.2", "2001:db8:1::1"} {
		if got := statuses(viaProxy, func(i int) string { return "6.6.6." + string(rune('0'+i)) + ", " + client }, 3); !slices.Equal(got, want) {
			t.Errorf("client %s through the proxy: %v, want %v", client, got, want)
		}
	}
	if got := statuses(around, func(i int) string { return "198.51.100." + string(rune('3'+i)) }, 3); !slices.Equal(got, want) {
		t.Errorf("around the proxy with spoofed headers: %v, want %v", got, want)
	}
	viaProxy.CloseIdleConnections()
	around.CloseIdleConnections()
	if code, errOut := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
}
