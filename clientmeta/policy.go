package clientmeta

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// TrustPolicy decides whether a client_id URL may be resolved at all
// (CIMD §6.5 "Domain Trust"). A [Resolver] consults it
// on every call, before its cache and before any network I/O; a non-nil
// error refuses the client and is returned wrapped in [ErrUntrusted].
// Implementations must be safe for concurrent use.
type TrustPolicy interface {
	AllowClientID(ctx context.Context, clientID *url.URL) error
}

// TrustPolicyFunc adapts a function to [TrustPolicy].
type TrustPolicyFunc func(ctx context.Context, clientID *url.URL) error

// AllowClientID calls f.
func (f TrustPolicyFunc) AllowClientID(ctx context.Context, clientID *url.URL) error {
	return f(ctx, clientID)
}

// errHostNotAllowed is the reason AllowHosts gives.
var errHostNotAllowed = errors.New("host not in the allowlist")

// AllowHosts returns a [TrustPolicy] that admits a client_id only if its
// host (without port, compared case-insensitively) is one of hosts, or a
// subdomain of an entry written as "*.example.com" (which does not admit
// example.com itself). With no hosts it admits nothing.
func AllowHosts(hosts ...string) TrustPolicy {
	exact := make([]string, 0, len(hosts))
	var suffixes []string
	for _, h := range hosts {
		h = ascii.ToLower(strings.TrimSpace(h))
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			suffixes = append(suffixes, "."+rest)
			continue
		}
		exact = append(exact, h)
	}
	return TrustPolicyFunc(func(_ context.Context, u *url.URL) error {
		host := ascii.ToLower(u.Hostname())
		if slices.Contains(exact, host) || slices.ContainsFunc(suffixes, func(s string) bool {
			return strings.HasSuffix(host, s) && len(host) > len(s)
		}) {
			return nil
		}
		return errHostNotAllowed
	})
}
