// Package nethook lets the module's own tests give a public configuration
// a fake resolver and dial function, so that the SSRF defences are tested
// without DNS and without sending a packet, while the public configurations
// carry no test-only fields. Each such configuration embeds a [Hook]
// through an unexported alias (type netHook = nethook.Hook): the field is
// unexported and Hook has no exported fields or methods, so nothing shows
// in the public API, yet [Set] and [Of] reach it from any package of this
// module. A configuration without the hook does not compile with Set.
// Production code only passes a configuration's Net on to the
// configurations it builds (Of, then Set); a zero Net changes nothing.
package nethook

import "github.com/mcpauth/mcpauth/internal/safehttp"

// Net is what a test injects into the guarded fetcher behind a
// configuration. A nil field keeps the production default.
type Net struct {
	Resolver safehttp.Resolver
	Dial     safehttp.DialFunc
}

// Apply copies n into opts.
func (n Net) Apply(opts *safehttp.Options) {
	if n.Resolver != nil {
		opts.Resolver = n.Resolver
	}
	if n.Dial != nil {
		opts.Dial = n.Dial
	}
}

// Hook holds a configuration's Net. Embed it through an unexported alias.
type Hook struct{ net Net }

// With returns a Hook holding n, for a configuration literal inside its
// own package.
func With(n Net) Hook { return Hook{net: n} }

func (h *Hook) hook() *Hook { return h }

// hooked is a pointer to a configuration embedding a Hook.
type hooked interface{ hook() *Hook }

// Set gives cfg the resolver and dial function of n and returns cfg.
func Set[T any, P interface {
	*T
	hooked
}](cfg *T, n Net) *T {
	P(cfg).hook().net = n
	return cfg
}

// Of returns the Net of cfg.
func Of(cfg hooked) Net { return cfg.hook().net }
