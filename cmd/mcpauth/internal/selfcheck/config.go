package selfcheck

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults applied to zero-valued [Config] fields.
const (
	// DefaultOrigin is the disallowed Origin sent by the TR-01 check.
	DefaultOrigin = "https://evil.example"
	// DefaultTimeout bounds each request to the server under test.
	DefaultTimeout = 10 * time.Second
	// MaxBodyBytes caps every response body read from the server under
	// test; a longer body is cut and reported, never read further.
	MaxBodyBytes = 1 << 20
	// MaxAuthServers bounds how many authorization servers listed in the
	// metadata are checked.
	MaxAuthServers = 4
)

// Config says what to check and how to reach it. Only URL is required; the
// zero value of every other field is documented and never weakens a check.
type Config struct {
	// URL is the MCP endpoint under test, exactly as a client would be
	// configured with it, e.g. "https://mcp.example.com/mcp". REQUIRED;
	// https, or plain http to a loopback host with
	// InsecureAllowHTTPLoopback. The metadata "resource" must be
	// byte-identical to it (RS-03).
	URL string
	// Token is a valid access token for URL. Empty skips the checks that
	// need one (a successful call, RS-20, TR-03, RS-12). It is sent only to
	// URL and never appears in the report. The RS-17 check sends it once
	// in the query string, where proxies and access logs may record it:
	// use a short-lived token.
	Token string
	// DelegatedToken is an access token for URL obtained by delegation
	// (RFC 8693 token exchange; its "act" claim names the actors). The
	// check calls tools/list with it and reports how the server treats
	// delegated tokens. Empty skips that check. It is sent only to URL and
	// never appears in the report.
	DelegatedToken string
	// StepUpTool names a tool that Token lacks the scope for; the check
	// calls it and expects 403 insufficient_scope (RS-12). Empty skips
	// that check.
	StepUpTool string
	// Origin is the disallowed Origin sent by the TR-01 check. Empty means
	// [DefaultOrigin].
	Origin string
	// AllowedOrigin is an Origin the server accepts, used to check CORS
	// (RS-26). Empty means the origin of URL.
	AllowedOrigin string
	// InsecureAllowHTTPLoopback permits plain http and loopback addresses
	// for URL, the metadata pointer and the authorization servers, for
	// servers on this machine. False means https and, for URLs the server
	// names, public addresses only.
	InsecureAllowHTTPLoopback bool
	// HTTPClient sends the requests to URL and to the well-known URLs on
	// its origin. Nil means a client with Timeout, no redirects and no
	// environment proxy, trusting Fetch.TLSConfig (nil: the system roots).
	// Bodies are capped at [MaxBodyBytes] either way.
	HTTPClient *http.Client
	// Fetch configures the guarded fetcher used for every URL the server
	// names (resource_metadata, authorization server metadata). The zero
	// value is the strict production configuration; its
	// InsecureAllowHTTPLoopback is replaced by this Config's.
	Fetch safehttp.Options
	// Timeout bounds each request of the default HTTPClient. Zero means
	// [DefaultTimeout].
	Timeout time.Duration
	// Now is the clock for the report's time. Nil means time.Now.
	Now clock.Func
}

// prepared is a validated Config with its derived values.
type prepared struct {
	Config
	policy        oauthmeta.URLPolicy
	prmURL        string // path-inserted PRM URL
	rootPRMURL    string // PRM URL at the origin
	origin        string // origin of URL
	allowedOrigin string
	client        *http.Client
	fetcher       *safehttp.Fetcher
}

func (c Config) prepare() (*prepared, error) {
	p := &prepared{Config: c, policy: oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: c.InsecureAllowHTTPLoopback}}
	if err := p.policy.CheckURL(c.URL); err != nil {
		return nil, fmt.Errorf("%w: URL: %w", ErrConfig, err)
	}
	var err error
	if p.prmURL, err = oauthmeta.ProtectedResourceMetadataURL(c.URL); err != nil {
		return nil, fmt.Errorf("%w: URL: %w", ErrConfig, err)
	}
	if p.rootPRMURL, p.origin, err = oauthmeta.ProtectedResourceMetadataRootURL(c.URL); err != nil {
		return nil, fmt.Errorf("%w: URL: %w", ErrConfig, err)
	}
	if p.Origin == "" {
		p.Origin = DefaultOrigin
	}
	if p.allowedOrigin = c.AllowedOrigin; p.allowedOrigin == "" {
		p.allowedOrigin = p.origin
	}
	for _, o := range []struct{ name, v string }{{"Origin", p.Origin}, {"AllowedOrigin", p.allowedOrigin}} {
		if !validOrigin(o.v) {
			return nil, fmt.Errorf("%w: %s is not a scheme://host[:port] origin", ErrConfig, o.name)
		}
	}
	if strings.ContainsAny(c.Token+c.DelegatedToken, " \t\r\n\x00") || strings.ContainsAny(c.StepUpTool, "\r\n\x00") {
		return nil, fmt.Errorf("%w: Token, DelegatedToken or StepUpTool contains forbidden characters", ErrConfig)
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	fetch := c.Fetch
	fetch.InsecureAllowHTTPLoopback = c.InsecureAllowHTTPLoopback
	p.fetcher = safehttp.New(fetch)
	if p.client = c.HTTPClient; p.client == nil {
		p.client = defaultClient(p.Timeout, fetch)
	}
	return p, nil
}

// validOrigin reports whether o is a serialized origin (RFC 6454 §6.2).
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil && o == u.Scheme+"://"+u.Host
}

// defaultClient talks to the server under test: bounded, no redirects, no
// environment proxy.
func defaultClient(timeout time.Duration, fetch safehttp.Options) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			TLSClientConfig:       fetch.TLSConfig.Clone(), // net/http writes to it
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
