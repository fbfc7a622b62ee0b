package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpauth/mcpauth/internal/proxyheader"
	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// peerCommand is the hidden first argument that makes mcpauth-load run one
// of the proxies -compare measures mcpauth protect against, as a process of
// its own (the harness re-executes itself with it):
//
//	mcpauth-load peer bare --addr 127.0.0.1:P --upstream URL
//	mcpauth-load peer sdk  --addr 127.0.0.1:P --upstream URL --issuer URL --resource URL
//	mcpauth-load peer jose --addr 127.0.0.1:P --upstream URL --issuer URL
//
// "bare" is the floor: an httputil.ReverseProxy behind protect's server
// settings, with protect's upstream transport, copy-buffer pool and full
// duplex (internal/revproxy) and nothing else, so
// that protect ÷ bare is the cost of what protect adds in front of the
// proxy. "sdk" is the official go-sdk's auth.RequireBearerToken with a
// straightforward go-jose verifier (the issuer's keys fetched once at
// start, signature, iss, aud, exp with 30 s leeway, scope mcp:tools) in
// front of that same proxy, which removes credentials and identity headers
// in every spelling by protect's rule (internal/proxyheader) and forwards
// the token's subject as X-Forwarded-User like protect does. "jose" is the
// floor of a verifying proxy: bare behind go-jose's check of the token's
// ES256 signature and nothing else (no claims decoded, no expiry,
// audience or scope check, no header removed or added), the least work any
// proxy that verifies tokens with go-jose does on a token it has not seen.
// It is a measuring stick, not a usable proxy: it takes an expired token or
// one for another audience. Each prints "listening on http://ADDR" when
// ready and stops on SIGTERM.
const peerCommand = "peer"

// josePeer is the name of the signature-only peer, as a peer kind and as a
// -compare candidate.
const josePeer = "jose"

// joseProbeKinds are the invalid tokens the jose peer must refuse before
// any figure is taken: the ones its signature check is there to catch.
var joseProbeKinds = []string{"bad-signature", "alg-none", "unknown-kid"}

func runPeer(args []string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "mcpauth-load peer:", err); return 1 }
	if len(args) > 0 && args[0] == floorPeer {
		return runFloorPeer(args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "bare" && args[0] != "sdk" && args[0] != josePeer) {
		return fail(errors.New("want bare, sdk, " + josePeer + " or " + floorPeer))
	}
	kind := args[0]
	fs := flag.NewFlagSet("mcpauth-load peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	upstreamURL := fs.String("upstream", "", "the upstream MCP endpoint")
	issuer := fs.String("issuer", "", "sdk, jose: the trusted issuer (keys from its RFC 8414 metadata)")
	resourceURL := fs.String("resource", "", "sdk: the resource identifier, the tokens' audience")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	upstream, err := url.Parse(*upstreamURL)
	if err != nil || upstream.Scheme != "http" || !oauthmeta.IsLoopbackHost(upstream.Hostname()) {
		return fail(fmt.Errorf("--upstream %q: want an http URL on loopback", *upstreamURL))
	}
	if host, _, err := net.SplitHostPort(*addr); err != nil || !oauthmeta.IsLoopbackHost(host) {
		return fail(fmt.Errorf("--addr %q: want a loopback address", *addr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var h http.Handler = revproxy.FullDuplex(peerProxy(upstream, kind == "sdk")) // as protect proxies
	if kind != "bare" {
		keys, err := fetchKeys(ctx, *issuer)
		if err != nil {
			return fail(err)
		}
		if kind == josePeer {
			h = signatureOnly(keys, h)
		} else {
			prm, err := oauthmeta.ProtectedResourceMetadataURL(*resourceURL)
			if err != nil {
				return fail(fmt.Errorf("--resource: %w", err))
			}
			h = auth.RequireBearerToken(joseVerifier(keys, *issuer, *resourceURL),
				&auth.RequireBearerTokenOptions{ResourceMetadataURL: prm, Scopes: []string{"mcp:tools"}})(h)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "listening on http://%s (%s peer)\n", ln.Addr(), kind)
	if err := servePeer(ctx, ln, h); err != nil {
		return fail(err)
	}
	return 0
}

// servePeer serves h on ln with protect's own server settings until ctx
// ends (SIGTERM), then shuts the server down within 5 s.
func servePeer(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := revproxy.Server(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// peerProxy is the reverse proxy both peers share: protect's upstream
// transport and buffer pool (internal/revproxy), FlushInterval 0 like
// protect, so that the comparison measures what sits in front of the
// proxy, not connection reuse or buffer allocation.
func peerProxy(upstream *url.URL, identity bool) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target := *upstream
			pr.Out.URL = &target
			pr.Out.Host = ""
			pr.SetXForwarded()
			if identity {
				// What protect removes, by the same rule: credentials
				// and identity headers in every spelling.
				pr.Out.Header = proxyheader.Rule{}.Forward(pr.Out.Header, 1)
				if info := auth.TokenInfoFromContext(pr.In.Context()); info != nil {
					pr.Out.Header.Set("X-Forwarded-User", info.UserID)
				}
			}
		},
		Transport:  revproxy.Transport(),
		BufferPool: revproxy.NewBufferPool(),
	}
}

// fetchKeys reads the issuer's RFC 8414 metadata and its JWK Set, once.
func fetchKeys(ctx context.Context, issuer string) (*jose.JSONWebKeySet, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(u string, v any) error { return getJSON(ctx, client, u, v) }
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := get(strings.TrimSuffix(issuer, "/")+"/.well-known/oauth-authorization-server", &meta); err != nil {
		return nil, err
	}
	var set jose.JSONWebKeySet
	if err := get(meta.JWKSURI, &set); err != nil {
		return nil, err
	}
	return &set, nil
}

// signatureOnly passes a request to next when its Bearer token is a JWS
// whose ES256 signature go-jose verifies with the issuer's key named by its
// "kid", and answers 401 otherwise. It checks nothing else: see josePeer.
func signatureOnly(keys *jose.JSONWebKeySet, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || !signedByIssuer(keys, token) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func signedByIssuer(keys *jose.JSONWebKeySet, token string) bool {
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 {
		return false
	}
	found := keys.Key(jws.Signatures[0].Header.KeyID)
	if len(found) != 1 {
		return false
	}
	_, err = jws.Verify(found[0].Key)
	return err == nil
}

// joseVerifier is the minimal verifier an SDK user would write: go-jose's
// jwt parse, the key by kid, signature, iss, aud and exp.
func joseVerifier(keys *jose.JSONWebKeySet, issuer, resourceURL string) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil || len(tok.Headers) != 1 {
			return nil, auth.ErrInvalidToken
		}
		found := keys.Key(tok.Headers[0].KeyID)
		if len(found) != 1 {
			return nil, auth.ErrInvalidToken
		}
		var c jwt.Claims
		var extra struct {
			Scope    string `json:"scope"`
			ClientID string `json:"client_id"`
		}
		if err := tok.Claims(found[0].Key, &c, &extra); err != nil {
			return nil, auth.ErrInvalidToken
		}
		if err := c.ValidateWithLeeway(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{resourceURL}, Time: time.Now()}, 30*time.Second); err != nil || c.Expiry == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: strings.Fields(extra.Scope), Expiration: c.Expiry.Time(), UserID: c.Subject,
			Extra: map[string]any{"client_id": extra.ClientID}}, nil
	}
}
