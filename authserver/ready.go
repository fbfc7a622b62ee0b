package authserver

import (
	"context"
	"errors"
	"fmt"
)

// Ready reports whether the server can serve what depends on others, for a
// readiness probe: each upstream [Login] can serve logins (asked through
// [Readier], else for its authorization endpoint) and the key set of each
// trusted issuer fetched by URL or discovery (Config.TrustedIssuers, the
// identity provider's ID token issuers) was fetched and is fresh. What is
// fresh is answered from memory; what is missing or stale is fetched once,
// bounded by ctx, so a probe costs no request while all is well. The error
// names each failing party and why; it is for logs, never for the caller
// of a health endpoint. Storage is not checked here.
func (s *Server) Ready(ctx context.Context) error {
	var errs []error
	for _, l := range s.upstreams() {
		var err error
		if r, ok := l.(Readier); ok {
			err = r.Ready(ctx)
		} else {
			_, err = l.AuthorizationEndpoint(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream login %s: %w", l.Issuer(), err))
		}
	}
	if err := s.keySets.ready(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// upstreams lists the logins at upstream providers: the one of
// Config.Login, or none.
func (s *Server) upstreams() []Login {
	if s.login == nil || s.login.provider == nil {
		return nil
	}
	return []Login{s.login.provider}
}
