// Package remotekeys keeps one issuer's JWK Set fetched from its jwks_uri
// ([Set]): the URL configured or found by RFC 8414 discovery (the locations
// MCP prescribes, the identical-issuer rule), fetched through
// internal/safehttp (https only, addresses checked at dial time, no
// redirects, the parser's size cap), parsed by internal/jwkset's Parse (the
// module's one JWK Set rule), refreshed in the background by jwx's
// jwk.Cache (on github.com/lestrrat-go/httprc, which only schedules: every
// fetch goes through the same fetcher and rule), refetched on an unknown
// "kid" at most once per interval with one shared fetch
// (x/sync/singleflight), the last good keys kept when a fetch fails.
//
// Package resource exposes it as resource.RemoteKeys; the authorization
// server uses it for clients' jwks_uri and upstream providers' keys. It is
// the only package that links httprc and jwx's cache, so the packages that
// only need the algorithm rules (internal/jwa) or the parser do not.
package remotekeys
