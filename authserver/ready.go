package authserver

import (
	"context"
	"errors"
	"fmt"
)

// ReadyCheck is one named part of [Server.Ready], for a readiness
// endpoint that answers per part.
type ReadyCheck struct {
	// Name is "upstream" for Config.Login, "upstream NAME" for each of
	// Config.Logins, and "trusted_issuers" when trusted issuers' keys are
	// fetched by URL or discovery.
	Name string
	// Check returns nil when the part is ready; its error is for logs.
	Check func(ctx context.Context) error
}

// ReadyChecks returns the parts of [Server.Ready], in a fixed order; none
// when the server depends on no one upstream.
func (s *Server) ReadyChecks() []ReadyCheck {
	var checks []ReadyCheck
	if s.login != nil {
		for _, p := range s.login.providers {
			name := "upstream"
			if p.name != "" {
				name += " " + p.name
			}
			l := p.provider
			checks = append(checks, ReadyCheck{Name: name, Check: func(ctx context.Context) error {
				if err := loginReady(ctx, l); err != nil {
					return fmt.Errorf("upstream login %s: %w", l.Issuer(), err)
				}
				return nil
			}})
		}
	}
	if s.keySets.fetchesTrusted() {
		checks = append(checks, ReadyCheck{Name: "trusted_issuers", Check: s.keySets.ready})
	}
	return checks
}

// Ready reports whether the server can serve what depends on others, for a
// readiness probe: each upstream [Login] (Config.Login or each of
// Config.Logins) can serve logins (asked through [Readier], else for its
// authorization endpoint) and the key set of each trusted issuer fetched
// by URL or discovery (Config.TrustedIssuers, the identity provider's ID
// token issuers) was fetched and is fresh. What is fresh is answered from
// memory; what is missing or stale is fetched once, bounded by ctx, so a
// probe costs no request while all is well. The error names each failing
// party and why; it is for logs, never for the caller of a health
// endpoint. Storage is not checked here. [Server.ReadyChecks] has the
// same checks one by one.
func (s *Server) Ready(ctx context.Context) error {
	var errs []error
	for _, c := range s.ReadyChecks() {
		if err := c.Check(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loginReady asks l whether it can serve logins: through [Readier], else
// for its authorization endpoint.
func loginReady(ctx context.Context, l Login) error {
	if r, ok := l.(Readier); ok {
		return r.Ready(ctx)
	}
	_, err := l.AuthorizationEndpoint(ctx)
	return err
}
