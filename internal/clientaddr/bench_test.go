package clientaddr

import (
	"net/http"
	"strings"
	"testing"
)

// BenchmarkResolve measures one resolution: an untrusted peer (no header
// read), a typical chain of three hops in each header, and a 1 MiB header
// whose client is on the right (the walk reads only the right end).
func BenchmarkResolve(b *testing.B) {
	xff, fwd := mustNew(b, XForwardedFor), mustNew(b, Forwarded)
	huge := strings.Repeat("198.51.100.1, ", (1<<20)/14) + "203.0.113.7, 10.0.0.2"
	for _, bc := range []struct {
		name string
		r    *Resolver
		peer string
		h    http.Header
	}{
		{"untrusted-peer", xff, "203.0.113.9:4711", http.Header{"X-Forwarded-For": {"198.51.100.1"}}},
		{"xff-3-hops", xff, "10.0.0.1:4711", http.Header{"X-Forwarded-For": {"198.51.100.1, 203.0.113.7, 10.0.0.2"}}},
		{"xff-ipv6", xff, "[2001:db8:ffff::1]:4711", http.Header{"X-Forwarded-For": {"2001:db8:1::7, 2001:db8:ffff::2"}}},
		{"forwarded-3-hops", fwd, "10.0.0.1:4711", http.Header{"Forwarded": {`for=198.51.100.1, for="[2001:db8::7]:4711";proto=https, for=10.0.0.2;by=10.0.0.1`}}},
		{"xff-1MiB", xff, "10.0.0.1:4711", http.Header{"X-Forwarded-For": {huge}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !bc.r.Resolve(bc.peer, bc.h).IsValid() {
					b.Fatal("no address")
				}
			}
		})
	}
}
