package clientaddr

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// FuzzResolve feeds arbitrary peers and header lines to both resolvers and
// checks that:
//
//   - nothing panics, and the result is the zero Addr only for a peer
//     that is not an address, never zoned or IPv4-mapped;
//   - an untrusted peer gets its own address, whatever the header says;
//   - an untrusted result is the same when anything is added to the left
//     of the header (another line before the others): no client can
//     change another's address, or its own, by what it sends;
//   - the result is what a left-to-right reading of the whole list gives
//     (a reference split of each line at its top-level commas), whenever
//     that reading succeeds within the bounds.
func FuzzResolve(f *testing.F) {
	for _, s := range [][3]string{
		{"10.0.0.1:1", "198.51.100.1, 203.0.113.7, 10.0.0.2", "10.0.0.3"},
		{"10.0.0.1:1", `for=198.51.100.1, for="[2001:db8::7]:4711";proto=https`, "for=10.0.0.2;by=10.0.0.1"},
		{"10.0.0.1:1", `for=203.0.113.7;ext="x\", for=6.6.6.6"`, ""},
		{"10.0.0.1:1", `for="6.6.6.6, for=203.0.113.7`, `for=unknown`},
		{"[::ffff:10.0.0.1]:80", "::ffff:203.0.113.7", "[2001:db8:ffff::1]:80"},
		{"203.0.113.9:4711", "10.0.0.1", "for=10.0.0.1"},
		{"[2001:db8:ffff::1]:4711", "2001:db8:1::7, fe80::1%eth0", `for=_hidden;ext=""`},
		{"@", "203.0.113.7", ""},
	} {
		f.Add(s[0], s[1], s[2], "for=198.51.100.66, 198.51.100.66")
	}
	resolvers := []*Resolver{mustNew(f, XForwardedFor), mustNew(f, Forwarded)}
	f.Fuzz(func(t *testing.T, peer, line1, line2, left string) {
		for _, r := range resolvers {
			h := http.Header{r.headerKey(): {line1, line2}}
			got := r.Resolve(peer, h)
			p := Peer(peer)
			switch {
			case got.IsValid() != p.IsValid():
				t.Fatalf("peer %q (%v) resolved to %v", peer, p, got)
			case got.Zone() != "" || got.Is4In6():
				t.Fatalf("result %v not normalised", got)
			case !r.trusts(p) && got != p:
				t.Fatalf("untrusted peer %v resolved to %v", p, got)
			}
			if got.IsValid() && !r.trusts(got) {
				h2 := http.Header{r.headerKey(): {left, line1, line2}}
				if again := r.Resolve(peer, h2); again != got {
					t.Fatalf("a line to the left changed %v into %v", got, again)
				}
			}
			if want, ok := r.reference(peer, h); ok && got != want {
				t.Fatalf("Resolve = %v, left-to-right reading %v", got, want)
			}
		}
	})
}

// reference resolves by splitting each line left to right at the commas
// outside quoted strings (the way RFC 9110 §5.6 reads a list), then
// walking the whole list from the right. It gives up (false) where the
// split fails or the bounds would apply.
func (r *Resolver) reference(peer string, h http.Header) (netip.Addr, bool) {
	last := Peer(peer)
	if !last.IsValid() || !r.trusts(last) {
		return last, true
	}
	var elems []string
	for _, line := range h[r.headerKey()] {
		e, ok := splitForward(line, r.header == Forwarded)
		if !ok {
			return netip.Addr{}, false
		}
		elems = append(elems, e...)
	}
	if len(elems) > MaxHops {
		return netip.Addr{}, false
	}
	for i := len(elems) - 1; i >= 0; i-- {
		if len(elems[i]) > MaxElementBytes {
			return netip.Addr{}, false
		}
		e := strings.Trim(elems[i], " \t")
		if e == "" {
			continue
		}
		a, ok := r.parseElement(e)
		if !ok {
			return last, true
		}
		if !r.trusts(a) {
			return a, true
		}
		last = a
	}
	return last, true
}

// splitForward splits a list at its top-level commas, reading quoted
// strings and quoted-pairs from the left; false if a quoted string is
// unterminated.
func splitForward(s string, quoted bool) ([]string, bool) {
	var out []string
	start, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && inQuote && c == '\\':
			i++
		case quoted && c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if inQuote {
		return nil, false
	}
	return append(out, s[start:]), true
}
