package authserver

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// proxySource is the address the forwarding proxy of the tests connects
// to the server from, the one trusted proxy.
const proxySource = "127.0.0.3"

// simulatedClient is the request header by which a test tells the
// forwarding proxy which client address it stands for. The proxy removes
// it.
const simulatedClient = "X-Test-Client-Address"

// behindProxy starts a reverse proxy (httputil.ReverseProxy) on 127.0.0.1
// in front of h's server, connecting from proxySource, that appends to
// header (as nginx's $proxy_add_x_forwarded_for and HAProxy do) the
// client address of each request: the simulatedClient header's value, as
// an edge proxy would have seen it. What the client sent in the header
// stays, to the left. It returns a harness whose requests go through the
// proxy.
func (h *harness) behindProxy(header ProxyHeader) *harness {
	h.t.Helper()
	tr := ownTransport(h.t)
	tr.DialContext = oauthtest.SourceDialer(h.t, proxySource).DialContext
	target, _ := url.Parse(h.srv.URL)
	rp := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			addr := netip.MustParseAddr(pr.In.Header.Get(simulatedClient))
			pr.Out.Header.Del(simulatedClient)
			// Rewrite starts from an outbound request without forwarding
			// headers: put back what the client sent, then append.
			name, elem := "X-Forwarded-For", addr.String()
			if header == ProxyHeaderForwarded {
				name, elem = "Forwarded", "for="+addr.String()
				if addr.Is6() {
					elem = `for="[` + addr.String() + `]:4711"`
				}
			}
			sent := pr.In.Header.Values(name)
			if len(sent) > 0 {
				elem = sent[len(sent)-1] + ", " + elem
				pr.Out.Header[name] = append(slices.Clone(sent[:len(sent)-1]), elem)
			} else {
				pr.Out.Header.Set(name, elem)
			}
		},
	}
	srv := httptest.NewServer(rp)
	h.t.Cleanup(srv.Close)
	c := *h
	c.issuer = srv.URL
	return &c
}

// spoofHeaders are forwarding headers a client makes up: random addresses,
// some of them the trusted proxy's own.
func spoofHeaders(r *rand.Rand) http.Header {
	a := netip.AddrFrom4([4]byte{byte(1 + r.IntN(223)), byte(r.IntN(256)), byte(r.IntN(256)), byte(1 + r.IntN(254))})
	return http.Header{
		"X-Forwarded-For": {fmt.Sprintf("%s, %s", a, proxySource)},
		"Forwarded":       {fmt.Sprintf("for=%s, for=%s", a, proxySource)},
	}
}

// TestRateLimitsBehindProxy is the load test of rate limits behind a load
// balancer: many clients reach the server through one forwarding proxy,
// whose address is trusted. Each client gets a bucket of its own at the
// token and registration endpoints and at the browser endpoints (its
// burst allowed, then 429), so together they get far more than one
// bucket's worth; IPv6 clients count by /64; a client making up
// forwarding headers through the proxy, and a peer sending them directly
// around the proxy, still get only their own one bucket. Without
// TrustedProxies the same load shares the proxy's single bucket. The
// clock is fixed: responses are counted, not timed.
func TestRateLimitsBehindProxy(t *testing.T) {
	t.Parallel()
	const burst, perKind = 3, 20
	var clients []netip.Addr
	for i := range perKind {
		clients = append(clients, netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}),
			netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(i + 1), 14: 0x12, 15: 0x34}))
	}
	limits := RateLimit{PerIP: 1, PerClient: math.Inf(1), Burst: burst, PerIPBrowser: 1, BrowserBurst: burst}
	form := url.Values{"grant_type": {"password"}, "client_id": {publicID}} // 400 unsupported_grant_type
	// send makes n requests as client (through the proxy, or directly when
	// client is invalid) and returns how many were not throttled; every
	// other answer must be 429. Requests alternate between the token and
	// registration endpoints, which share the per-address bucket, or go to
	// the authorization endpoint (browser).
	send := func(t *testing.T, h *harness, client netip.Addr, n int, browser bool, spoof *rand.Rand) int {
		t.Helper()
		allowed := 0
		for i := range n {
			extra := http.Header{}
			if spoof != nil {
				extra = spoofHeaders(spoof)
			}
			if client.IsValid() {
				extra.Set(simulatedClient, client.String())
			}
			var status int
			switch {
			case browser:
				req, _ := http.NewRequest(http.MethodGet, h.url(pathAuthorize+"?client_id=nobody"), nil)
				req.Header = extra
				resp, err := h.http.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				status = resp.StatusCode
			case i%2 == 0:
				resp, _ := h.postHeader(pathToken, form, "", "", extra)
				status = resp.StatusCode
			default:
				resp, _ := h.postHeader(pathRegister, url.Values{}, "", "", extra)
				status = resp.StatusCode
			}
			switch status {
			case http.StatusTooManyRequests:
			case http.StatusBadRequest:
				allowed++
			default:
				t.Fatalf("%v request %d: status %d", client, i, status)
			}
		}
		return allowed
	}

	for _, header := range []ProxyHeader{ProxyHeaderXForwardedFor, ProxyHeaderForwarded} {
		t.Run(header.String(), func(t *testing.T) {
			t.Parallel()
			rnd := rand.New(rand.NewPCG(1, uint64(header)))
			h := newHarness(t, "", func(c *Config) {
				c.RateLimit = limits
				c.TrustedProxies = TrustedProxies{Prefixes: []netip.Prefix{netip.MustParsePrefix(proxySource + "/32")}, Header: header}
			})
			proxied := h.behindProxy(header)
			for _, browser := range []bool{false, true} {
				total := 0
				for i, c := range clients {
					var spoof *rand.Rand
					if i%4 == 0 { // every fourth client makes up headers
						spoof = rnd
					}
					if got := send(t, proxied, c, burst+2, browser, spoof); got != burst {
						t.Fatalf("browser %v: client %v got %d requests before 429, want its own burst of %d", browser, c, got, burst)
					}
					total += burst
				}
				if total != len(clients)*burst || total <= 10*burst {
					t.Fatalf("total %d", total)
				}
				// Another address in an IPv6 client's /64 shares its
				// spent bucket; one in a fresh /64 has its own.
				if got := send(t, proxied, netip.MustParseAddr("2001:db8:1::99"), 1, browser, nil); got != 0 {
					t.Fatalf("browser %v: an address of a spent /64 was allowed", browser)
				}
				if got := send(t, proxied, netip.MustParseAddr("2001:db8:ffff::1"), burst+1, browser, nil); got != burst {
					t.Fatalf("browser %v: a fresh /64 got %d, want %d", browser, got, burst)
				}
				// A peer around the proxy (127.0.0.1, untrusted) making
				// up both headers shares its one bucket.
				if got := send(t, h, netip.Addr{}, 4*burst, browser, rnd); got != burst {
					t.Fatalf("browser %v: the untrusted peer got %d requests with spoofed headers, want %d", browser, got, burst)
				}
			}
		})
	}

	t.Run("without trusted proxies", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", func(c *Config) { c.RateLimit = limits })
		proxied := h.behindProxy(ProxyHeaderXForwardedFor)
		total := 0
		for _, c := range clients {
			total += send(t, proxied, c, burst+2, false, nil)
		}
		if total != burst {
			t.Fatalf("all clients behind the untrusted proxy got %d requests, want the one bucket of %d", total, burst)
		}
	})
}

// TestTrustedProxiesConfig: New refuses a prefix that is invalid, trusts
// every address or reaches beyond the IPv4-mapped space, and an unknown
// header; ParseProxyHeader reads the names String writes, and no other.
func TestTrustedProxiesConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tp   TrustedProxies
	}{
		{"zero prefix", TrustedProxies{Prefixes: []netip.Prefix{{}}}},
		{"every IPv4 address", TrustedProxies{Prefixes: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}},
		{"every IPv6 address", TrustedProxies{Prefixes: []netip.Prefix{netip.MustParsePrefix("::/0")}}},
		{"every IPv4-mapped address", TrustedProxies{Prefixes: []netip.Prefix{netip.MustParsePrefix("::ffff:0.0.0.0/96")}}},
		{"unknown header", TrustedProxies{Header: ProxyHeader(2)}},
		{"negative header", TrustedProxies{Header: ProxyHeader(-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Issuer: "https://as.example", TrustedProxies: tc.tp})
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "TrustedProxies") {
				t.Fatalf("err = %v, want ErrConfig naming TrustedProxies", err)
			}
		})
	}
	for _, h := range []ProxyHeader{ProxyHeaderXForwardedFor, ProxyHeaderForwarded} {
		if got, err := ParseProxyHeader(h.String()); err != nil || got != h {
			t.Errorf("ParseProxyHeader(%q) = %v, %v", h, got, err)
		}
	}
	for _, s := range []string{"", "X-Forwarded-For", "x_forwarded_for", "x-real-ip", "forwarded "} {
		if _, err := ParseProxyHeader(s); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseProxyHeader(%q): %v", s, err)
		}
	}
}

// FuzzParseProxyHeader: only the two names parse, each to the header whose
// String it is.
func FuzzParseProxyHeader(f *testing.F) {
	for _, s := range []string{"x-forwarded-for", "forwarded", "X-Forwarded-For", "x_forwarded_for", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseProxyHeader(s)
		if err == nil && h.String() != s {
			t.Fatalf("ParseProxyHeader(%q) = %v", s, h)
		}
	})
}
