package main

import (
	"flag"
	"fmt"
	"math"
	"net/netip"

	"github.com/mcpauth/mcpauth/authserver"
)

// limitFlags are the authserver flags of the rate limits
// (authserver.RateLimit) and of the proxies in front of the server
// (authserver.TrustedProxies). A zero rate or burst is the default, never
// "no limit".
type limitFlags struct {
	perIP, perClient, browser float64
	burst, browserBurst       int
	proxies                   listFlag
	proxyHeader               string
}

func (l *limitFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&l.perIP, "rate-per-ip", 0, "requests per second per client address at the token, registration, introspection and revocation endpoints (0: 10)")
	fs.Float64Var(&l.perClient, "rate-per-client", 0, "requests per second per (client address, client_id) at the token, introspection and revocation endpoints, and per authenticated confidential client (0: 10)")
	fs.IntVar(&l.burst, "rate-burst", 0, "bucket size of the --rate-per-ip and --rate-per-client limits (0: 20)")
	fs.Float64Var(&l.browser, "rate-browser", 0, "requests per second per client address at the authorization, consent and upstream callback endpoints (0: 2)")
	fs.IntVar(&l.browserBurst, "rate-browser-burst", 0, "bucket size of the --rate-browser limit (0: 100)")
	fs.Var(&l.proxies, "trusted-proxy", "a load balancer or reverse proxy in front of the server, `CIDR` or address, whose --trusted-proxy-header names the client address the rate limits count by (repeatable; default: none, the connection's peer is the client)")
	fs.StringVar(&l.proxyHeader, "trusted-proxy-header", "", "the header the --trusted-proxy proxies append the client address to: x-forwarded-for or forwarded (RFC 7239) (default x-forwarded-for)")
}

// config returns the rate limits and the trusted proxies.
func (l *limitFlags) config() (authserver.RateLimit, authserver.TrustedProxies, error) {
	var tp authserver.TrustedProxies
	for _, r := range []struct {
		flag string
		v    float64
	}{{"--rate-per-ip", l.perIP}, {"--rate-per-client", l.perClient}, {"--rate-browser", l.browser}} {
		if !(r.v >= 0) || math.IsInf(r.v, 0) {
			return authserver.RateLimit{}, tp, fmt.Errorf("%s %v: must be a number of requests per second, 0 for the default", r.flag, r.v)
		}
	}
	for _, b := range []struct {
		flag string
		v    int
	}{{"--rate-burst", l.burst}, {"--rate-browser-burst", l.browserBurst}} {
		if b.v < 0 {
			return authserver.RateLimit{}, tp, fmt.Errorf("%s %d: must be a number of requests, 0 for the default", b.flag, b.v)
		}
	}
	rl := authserver.RateLimit{PerIP: l.perIP, PerClient: l.perClient, Burst: l.burst, PerIPBrowser: l.browser, BrowserBurst: l.browserBurst}
	for _, s := range l.proxies {
		p, err := parseTrustedProxy(s)
		if err != nil {
			return rl, tp, err
		}
		tp.Prefixes = append(tp.Prefixes, p)
	}
	if l.proxyHeader == "" {
		return rl, tp, nil
	}
	if len(tp.Prefixes) == 0 {
		return rl, tp, fmt.Errorf("--trusted-proxy-header needs --trusted-proxy")
	}
	var err error
	if tp.Header, err = authserver.ParseProxyHeader(l.proxyHeader); err != nil {
		return rl, tp, fmt.Errorf("--trusted-proxy-header %q: must be x-forwarded-for or forwarded", l.proxyHeader)
	}
	return rl, tp, nil
}

// parseTrustedProxy parses a --trusted-proxy value: a prefix without host
// bits (10.0.0.0/8, 2001:db8::/32), or one address.
func parseTrustedProxy(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("--trusted-proxy %q: an address with a zone", s)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("--trusted-proxy %q is not a CIDR prefix or an address", s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("--trusted-proxy %q has bits set past the prefix: %s, or %s for one address",
			s, p.Masked(), netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
	}
	return p, nil
}
