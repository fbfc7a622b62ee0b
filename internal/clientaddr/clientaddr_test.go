package clientaddr

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// trusted are the proxies of the tests: a private range, one address, an
// IPv6 range and an IPv4-mapped prefix (taken as 172.16.0.0/12).
var trusted = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("192.168.1.1/32"),
	netip.MustParsePrefix("2001:db8:ffff::/48"),
	netip.MustParsePrefix("::ffff:172.16.0.0/108"),
}

func mustNew(t testing.TB, h Header) *Resolver {
	t.Helper()
	r, err := New(trusted, h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResolve: the client address of requests from trusted and untrusted
// peers, with X-Forwarded-For and Forwarded chains, spoofed, malformed
// and huge headers.
func TestResolve(t *testing.T) {
	t.Parallel()
	const (
		xff = "X-Forwarded-For"
		fwd = "Forwarded"
	)
	trustedChain := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}).String()
		}
		return strings.Join(s, ", ")
	}
	tests := []struct {
		name   string
		header Header // the configured one
		peer   string
		h      http.Header
		want   string // "" is the zero Addr
	}{
		// The peer.
		{"untrusted peer", XForwardedFor, "203.0.113.9:4711", nil, "203.0.113.9"},
		{"untrusted peer, spoofed XFF", XForwardedFor, "203.0.113.9:4711", http.Header{xff: {"198.51.100.1"}}, "203.0.113.9"},
		{"untrusted peer, spoofed Forwarded", Forwarded, "203.0.113.9:4711", http.Header{fwd: {"for=198.51.100.1"}}, "203.0.113.9"},
		{"untrusted peer, spoofed trusted hop", XForwardedFor, "203.0.113.9:4711", http.Header{xff: {"10.0.0.1"}}, "203.0.113.9"},
		{"trusted peer, no header", XForwardedFor, "10.0.0.1:4711", nil, "10.0.0.1"},
		{"trusted peer without port", XForwardedFor, "10.0.0.1", http.Header{xff: {"203.0.113.7"}}, "203.0.113.7"},
		{"IPv4-mapped trusted peer", XForwardedFor, "[::ffff:10.0.0.1]:4711", http.Header{xff: {"203.0.113.7"}}, "203.0.113.7"},
		{"peer in the mapped prefix", XForwardedFor, "172.16.9.9:1", http.Header{xff: {"203.0.113.7"}}, "203.0.113.7"},
		{"IPv4-mapped untrusted peer", XForwardedFor, "[::ffff:203.0.113.9]:4711", nil, "203.0.113.9"},
		{"zoned peer", XForwardedFor, "[fe80::1%eth0]:4711", nil, "fe80::1"},
		{"IPv6 trusted peer", XForwardedFor, "[2001:db8:ffff::1]:4711", http.Header{xff: {"2001:db8:1::7"}}, "2001:db8:1::7"},
		{"unix socket peer", XForwardedFor, "@", http.Header{xff: {"203.0.113.7"}}, ""},
		{"empty peer", XForwardedFor, "", http.Header{xff: {"203.0.113.7"}}, ""},

		// X-Forwarded-For.
		{"one hop", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7"}}, "203.0.113.7"},
		{"rightmost untrusted wins", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"198.51.100.1, 203.0.113.7, 10.0.0.2, 192.168.1.1"}}, "203.0.113.7"},
		{"client spoofs a trusted hop", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"10.0.0.66, 203.0.113.7"}}, "203.0.113.7"},
		{"all trusted", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"10.1.1.1, 10.2.2.2"}}, "10.1.1.1"},
		{"lines joined in order", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"198.51.100.1", "203.0.113.7, 10.0.0.2"}}, "203.0.113.7"},
		{"line boundary is a comma", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7", "10.0.0.2"}}, "203.0.113.7"},
		{"empty elements and lines", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"198.51.100.1", ", ,203.0.113.7,, ", ""}}, "203.0.113.7"},
		{"IPv4 with port", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7:4711"}}, "203.0.113.7"},
		{"bare IPv6", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"2001:db8::7"}}, "2001:db8::7"},
		{"bracketed IPv6", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"[2001:db8::7]"}}, "2001:db8::7"},
		{"bracketed IPv6 with port", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"[2001:db8::7]:4711"}}, "2001:db8::7"},
		{"IPv4-mapped hop", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"::ffff:203.0.113.7"}}, "203.0.113.7"},
		{"IPv4-mapped trusted hop skipped", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7, ::ffff:10.0.0.5"}}, "203.0.113.7"},
		{"tabs around elements", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"\t203.0.113.7\t"}}, "203.0.113.7"},
		{"Forwarded ignored", XForwardedFor, "10.0.0.1:1", http.Header{fwd: {"for=198.51.100.1"}, xff: {"203.0.113.7"}}, "203.0.113.7"},
		{"only Forwarded sent", XForwardedFor, "10.0.0.1:1", http.Header{fwd: {"for=198.51.100.1"}}, "10.0.0.1"},

		// Garbage in X-Forwarded-For: the last trusted address.
		{"garbage", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"not-an-ip"}}, "10.0.0.1"},
		{"garbage behind a trusted hop", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7, garbage, 10.0.0.2"}}, "10.0.0.2"},
		{"garbage left of the client", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"garbage, 203.0.113.7"}}, "203.0.113.7"},
		{"unknown", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"unknown"}}, "10.0.0.1"},
		{"leading zero", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"010.0.0.7"}}, "10.0.0.1"},
		{"zone", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"fe80::1%eth0"}}, "10.0.0.1"},
		{"bracketed IPv4", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"[203.0.113.7]"}}, "10.0.0.1"},
		{"port too large", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7:65536"}}, "10.0.0.1"},
		{"empty port", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7:"}}, "10.0.0.1"},
		{"obfuscated port in XFF", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7:_x"}}, "10.0.0.1"},
		{"space inside", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7 198.51.100.1"}}, "10.0.0.1"},
		{"control character", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"203.0.113.7\x00"}}, "10.0.0.1"},
		{"Forwarded syntax in XFF", XForwardedFor, "10.0.0.1:1", http.Header{xff: {"for=203.0.113.7"}}, "10.0.0.1"},

		// Forwarded.
		{"Forwarded one hop", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7"}}, "203.0.113.7"},
		{"Forwarded with parameters", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7;proto=https;by=10.0.0.1;host=as.example"}}, "203.0.113.7"},
		{"Forwarded for not first", Forwarded, "10.0.0.1:1", http.Header{fwd: {"proto=https;for=203.0.113.7"}}, "203.0.113.7"},
		{"Forwarded case-insensitive name", Forwarded, "10.0.0.1:1", http.Header{fwd: {"For=203.0.113.7;PROTO=https"}}, "203.0.113.7"},
		{"Forwarded quoted IPv4", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="203.0.113.7"`}}, "203.0.113.7"},
		{"Forwarded IPv4 with port", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="203.0.113.7:4711"`}}, "203.0.113.7"},
		{"Forwarded IPv6", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="[2001:db8::7]"`}}, "2001:db8::7"},
		{"Forwarded IPv6 with port", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="[2001:db8::7]:4711"`}}, "2001:db8::7"},
		{"Forwarded obfuscated port", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="203.0.113.7:_p-1.x"`}}, "203.0.113.7"},
		{"Forwarded escaped characters", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="\2\0\3.0.113.7"`}}, "203.0.113.7"},
		{"Forwarded chain", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=198.51.100.1, for=203.0.113.7;proto=https, for=10.0.0.2"}}, "203.0.113.7"},
		{"Forwarded lines", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=198.51.100.1", "for=203.0.113.7", "for=10.0.0.2"}}, "203.0.113.7"},
		{"Forwarded empty pairs", Forwarded, "10.0.0.1:1", http.Header{fwd: {";for=203.0.113.7;;"}}, "203.0.113.7"},
		{"Forwarded quoted comma to the right", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for=198.51.100.1, for=203.0.113.7;ext="a, for=6.6.6.6"`}}, "203.0.113.7"},
		{"Forwarded escaped quote", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for=203.0.113.7;ext="x\", for=6.6.6.6"`}}, "203.0.113.7"},
		{"Forwarded escaped backslash", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for=198.51.100.1;ext="x\\", for=203.0.113.7`}}, "203.0.113.7"},
		{"Forwarded unterminated quote of the client", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="6.6.6.6, for=203.0.113.7`}}, "203.0.113.7"},
		{"XFF ignored", Forwarded, "10.0.0.1:1", http.Header{xff: {"198.51.100.1"}, fwd: {"for=203.0.113.7"}}, "203.0.113.7"},
		{"only XFF sent", Forwarded, "10.0.0.1:1", http.Header{xff: {"198.51.100.1"}}, "10.0.0.1"},

		// Forwarded that names no address, or is malformed: the last
		// trusted address.
		{"Forwarded unknown", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=198.51.100.1, for=unknown, for=10.0.0.3"}}, "10.0.0.3"},
		{"Forwarded UNKNOWN", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="UNKNOWN:80"`}}, "10.0.0.1"},
		{"Forwarded obfuscated node", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=_hidden"}}, "10.0.0.1"},
		{"Forwarded unquoted IPv6", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=[2001:db8::7]"}}, "10.0.0.1"},
		{"Forwarded bare IPv6", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="2001:db8::7"`}}, "10.0.0.1"},
		{"Forwarded unquoted port", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7:80"}}, "10.0.0.1"},
		{"Forwarded no for", Forwarded, "10.0.0.1:1", http.Header{fwd: {"proto=https;by=10.0.0.1"}}, "10.0.0.1"},
		{"Forwarded for twice", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7;for=198.51.100.1"}}, "10.0.0.1"},
		{"Forwarded proto twice", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7;proto=http;proto=https"}}, "10.0.0.1"},
		{"Forwarded empty for", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for="}}, "10.0.0.1"},
		{"Forwarded empty quoted for", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for=""`}}, "10.0.0.1"},
		{"Forwarded spaces inside", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for = 203.0.113.7"}}, "10.0.0.1"},
		{"Forwarded space after semicolon", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7; proto=https"}}, "10.0.0.1"},
		{"Forwarded unterminated quote", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="203.0.113.7`}}, "10.0.0.1"},
		{"Forwarded junk after quote", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="203.0.113.7"x`}}, "10.0.0.1"},
		{"Forwarded bare word", Forwarded, "10.0.0.1:1", http.Header{fwd: {"203.0.113.7"}}, "10.0.0.1"},
		{"Forwarded zone", Forwarded, "10.0.0.1:1", http.Header{fwd: {`for="[fe80::1%25eth0]"`}}, "10.0.0.1"},
		{"Forwarded obs-text", Forwarded, "10.0.0.1:1", http.Header{fwd: {"for=203.0.113.7;ext=\"\xff\""}}, "10.0.0.1"},

		// Bounds.
		{"huge header, real client on the right", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: {strings.Repeat("198.51.100.1, ", 80_000) + "203.0.113.7"}}, "203.0.113.7"},
		{"huge Forwarded header, real client on the right", Forwarded, "10.0.0.1:1",
			http.Header{fwd: {strings.Repeat(`for="[2001:db8::1]";ext="a,b", `, 30_000) + "for=203.0.113.7"}}, "203.0.113.7"},
		{"huge element", XForwardedFor, "10.0.0.1:1", http.Header{xff: {strings.Repeat("1", 1<<20)}}, "10.0.0.1"},
		{"huge element behind a trusted hop", XForwardedFor, "10.0.0.1:1", http.Header{xff: {strings.Repeat("1", 1<<20) + ", 10.0.0.2"}}, "10.0.0.2"},
		{"element of the maximum size", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: {"6.6.6.6," + strings.Repeat(" ", MaxElementBytes-len("203.0.113.7")) + "203.0.113.7"}}, "203.0.113.7"},
		{"element one byte too long", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: {"6.6.6.6," + strings.Repeat(" ", MaxElementBytes+1-len("203.0.113.7")) + "203.0.113.7"}}, "10.0.0.1"},
		{"quoted string of the maximum size", Forwarded, "10.0.0.1:1",
			http.Header{fwd: {`for=6.6.6.6,for=203.0.113.7;ext="` + strings.Repeat(`\\`, (MaxElementBytes-len(`for=203.0.113.7;ext=""`))/2) + `"`}}, "203.0.113.7"},
		{"backslashes past the bound", Forwarded, "10.0.0.1:1",
			http.Header{fwd: {`for=203.0.113.7;ext="` + strings.Repeat(`\\`, MaxElementBytes) + `"`}}, "10.0.0.1"},
		{"trusted chain within the hop bound", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: {"203.0.113.7, " + trustedChain(MaxHops-1)}}, "203.0.113.7"},
		{"trusted chain beyond the hop bound", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: {"203.0.113.7, " + trustedChain(MaxHops)}}, "10.0.1.1"},
		{"empty elements count as hops", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: {"203.0.113.7" + strings.Repeat(",", MaxHops)}}, "10.0.0.1"},
		{"many lines", XForwardedFor, "10.0.0.1:1",
			http.Header{xff: append([]string{"203.0.113.7"}, strings.Split(trustedChain(MaxHops), ", ")...)}, "10.0.1.1"},
	}
	resolvers := map[Header]*Resolver{XForwardedFor: mustNew(t, XForwardedFor), Forwarded: mustNew(t, Forwarded)}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resolvers[tc.header].Resolve(tc.peer, tc.h)
			var want netip.Addr
			if tc.want != "" {
				want = netip.MustParseAddr(tc.want)
			}
			if got != want {
				t.Errorf("Resolve(%q) = %v, want %v", tc.peer, got, want)
			}
		})
	}
}

// TestResolveNoProxies: a nil, a zero and an empty resolver take the peer
// and read no header.
func TestResolveNoProxies(t *testing.T) {
	t.Parallel()
	empty, err := New(nil, XForwardedFor)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"X-Forwarded-For": {"203.0.113.7"}, "Forwarded": {"for=203.0.113.7"}}
	for name, r := range map[string]*Resolver{"nil": nil, "zero": {}, "empty": empty} {
		if got := r.Resolve("10.0.0.1:1", h); got != netip.MustParseAddr("10.0.0.1") {
			t.Errorf("%s resolver: %v", name, got)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	req.RemoteAddr, req.Header = "10.0.0.1:1", h
	if got := mustNew(t, XForwardedFor).Addr(req); got != netip.MustParseAddr("203.0.113.7") {
		t.Errorf("Addr = %v", got)
	}
}

// TestNewRefuses: invalid prefixes, /0, a mapped prefix wider than the
// mapped space and an unknown header are refused.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
		header  Header
	}{
		{"zero prefix", []netip.Prefix{{}}, XForwardedFor},
		{"IPv4 /0", []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}, XForwardedFor},
		{"IPv6 /0", []netip.Prefix{netip.MustParsePrefix("::/0")}, Forwarded},
		{"mapped /96 is every IPv4 address", []netip.Prefix{netip.MustParsePrefix("::ffff:0.0.0.0/96")}, XForwardedFor},
		{"mapped /90", []netip.Prefix{netip.MustParsePrefix("::ffff:0.0.0.0/90")}, XForwardedFor},
		{"unknown header", nil, Header(7)},
	} {
		if _, err := New(tc.trusted, tc.header); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	r, err := New([]netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}, XForwardedFor)
	if err != nil || !r.trusts(netip.MustParseAddr("10.200.0.1")) {
		t.Errorf("unmasked prefix: %v", err)
	}
}
