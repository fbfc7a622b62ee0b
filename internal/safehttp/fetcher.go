package safehttp

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Resolver resolves host names. *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a connection, like (*net.Dialer).DialContext. It is only
// ever called with an IP literal that passed the address check.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Defaults applied to zero-valued [Options] fields.
const (
	DefaultMaxBytes = 1 << 20
	DefaultTimeout  = 10 * time.Second
	maxRedirectCap  = 5
)

// Options configures a [Fetcher]. The zero value is the strict production
// configuration: https only, public addresses only, no redirects, 1 MiB cap,
// 10 s timeout, JSON content types only.
type Options struct {
	// Resolver resolves host names. Nil means net.DefaultResolver.
	Resolver Resolver
	// Dial opens connections to checked IP addresses. Nil means a
	// net.Dialer with a 5 s connect timeout.
	Dial DialFunc
	// TLSConfig is the client TLS configuration, for example to trust a test
	// server's certificate. Nil means the system roots. [New] keeps a copy:
	// net/http writes to the configuration of a transport it uses, so one
	// value shared by several fetchers would be a data race.
	TLSConfig *tls.Config
	// InsecureAllowHTTPLoopback permits targets on 127.0.0.0/8 and ::1 (and
	// plain http to them), for an authorization server or test server on
	// this machine. False means loopback is refused like any private
	// address. Private and special-use ranges stay refused either way.
	InsecureAllowHTTPLoopback bool
	// MaxBytes caps the response body. Zero means [DefaultMaxBytes].
	MaxBytes int64
	// Timeout bounds a whole fetch, connect to last byte. Zero means
	// [DefaultTimeout].
	Timeout time.Duration
	// MaxRedirects is how many redirects to follow, each hop checked again.
	// Zero means none: a redirect is an error. At most 5 are ever followed.
	MaxRedirects int
	// ContentTypes lists the acceptable media types. Nil means
	// "application/json" and any "+json" type. An empty non-nil slice
	// accepts any type.
	ContentTypes []string
	// UserAgent is sent as User-Agent. Empty means "mcpauth".
	UserAgent string
}

// Fetcher performs guarded GET requests. It is safe for concurrent use;
// constructing one does no I/O.
type Fetcher struct {
	opts   Options
	client *http.Client
}

// New returns a Fetcher for opts.
func New(opts Options) *Fetcher {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	opts.MaxRedirects = min(opts.MaxRedirects, maxRedirectCap)
	opts.UserAgent = cmp.Or(opts.UserAgent, "mcpauth")
	f := &Fetcher{opts: opts}
	transport := &http.Transport{
		Proxy:                 nil, // never an environment proxy
		DialContext:           f.dialContext,
		TLSClientConfig:       opts.TLSConfig.Clone(),
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	f.client = &http.Client{
		Transport:     transport,
		Timeout:       opts.Timeout,
		CheckRedirect: f.checkRedirect,
	}
	return f
}

// Client returns an *http.Client with the same guards (address check at
// dial time, scheme check per redirect hop, timeout, no proxy), for
// libraries that need a client rather than a fetch (JWK Set caches, token
// endpoint calls). It does not cap bodies or check content types; callers
// that read bodies must bound them.
func (f *Fetcher) Client() *http.Client { return f.client }

// Response is a fetched document.
type Response struct {
	// URL is the URL finally fetched (after permitted redirects).
	URL string
	// Header is the response header.
	Header http.Header
	// Body is the response body, at most Options.MaxBytes long.
	Body []byte
}

// Get fetches rawURL with an Accept header naming accept (empty means
// "application/json"), and returns the body of a 200 response. Any other
// status is a [*StatusError]; the body is then discarded.
func (f *Fetcher) Get(ctx context.Context, rawURL, accept string) (*Response, error) {
	return f.GetWithHeader(ctx, rawURL, accept, nil)
}

// GetWithHeader is [Fetcher.Get] with extra request headers, for example an
// Authorization header with an access token for rawURL's origin. A header
// carrying a credential (Authorization, DPoP, Cookie) is refused with
// [ErrRedirect] by a Fetcher that follows redirects: the credential must
// reach rawURL's origin and nothing else, so such a Fetcher needs
// MaxRedirects zero, where any redirect is an error.
func (f *Fetcher) GetWithHeader(ctx context.Context, rawURL, accept string, header http.Header) (*Response, error) {
	// Names canonicalised first, as they are sent: "authorization" is
	// sent as Authorization and must be refused as one.
	hdr := make(http.Header, len(header)+2)
	for k, vs := range header {
		for _, v := range vs {
			hdr.Add(k, v)
		}
	}
	if f.opts.MaxRedirects > 0 && hasAny(hdr, credentialHeaders[:]) {
		return nil, fmt.Errorf("%w: credentials are sent only by a fetcher that follows no redirects", ErrRedirect)
	}
	u, err := f.checkURL(rawURL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	req.Header = hdr
	req.Header.Set("Accept", cmp.Or(accept, "application/json"))
	req.Header.Set("User-Agent", f.opts.UserAgent)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return nil, &RedirectError{StatusCode: resp.StatusCode}
		}
		return nil, &StatusError{StatusCode: resp.StatusCode}
	}
	if err := f.checkContentType(resp.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, &TooLargeError{Limit: f.opts.MaxBytes}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return nil, unwrapURLError(err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return nil, &TooLargeError{Limit: f.opts.MaxBytes}
	}
	return &Response{URL: resp.Request.URL.String(), Header: resp.Header, Body: body}, nil
}

// CheckURL reports whether rawURL may be fetched at all under the options,
// before any resolution: an absolute http(s) URL without user information,
// https unless the host is a loopback literal or "localhost" and loopback is
// allowed.
func (f *Fetcher) CheckURL(rawURL string) error {
	_, err := f.checkURL(rawURL)
	return err
}

func (f *Fetcher) checkURL(rawURL string) (*url.URL, error) {
	if len(rawURL) > 4096 {
		return nil, fmt.Errorf("%w: too long", ErrInvalidURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: not an absolute URL", ErrInvalidURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: user information in URL", ErrInvalidURL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !f.opts.InsecureAllowHTTPLoopback || !oauthmeta.IsLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("%w: plain http is allowed only to loopback in insecure mode", ErrScheme)
		}
	default:
		return nil, fmt.Errorf("%w: only https", ErrScheme)
	}
	return u, nil
}

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.opts.MaxRedirects {
		return &RedirectError{StatusCode: req.Response.StatusCode, Hops: len(via)}
	}
	_, err := f.checkURL(req.URL.String())
	return err
}

func (f *Fetcher) checkContentType(ct string) error {
	if f.opts.ContentTypes != nil && len(f.opts.ContentTypes) == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	var ok bool
	if f.opts.ContentTypes == nil {
		ok = mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
	} else {
		ok = slices.ContainsFunc(f.opts.ContentTypes, func(want string) bool { return ascii.EqualFold(mt, want) })
	}
	if err != nil || !ok {
		return &ContentTypeError{ContentType: ct}
	}
	return nil
}

// dialContext resolves addr's host, checks every address, and dials the
// first one with the injected dial function. Because it dials the checked IP
// literal, a resolver that answers differently the second time changes
// nothing.
func (f *Fetcher) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	addrs, err := f.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if reason := checkAddr(a, f.opts.InsecureAllowHTTPLoopback); reason != "" {
			return nil, &BlockedAddressError{Host: host, Addr: a, Reason: reason}
		}
	}
	dial := f.opts.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second}
		dial = d.DialContext
	}
	var firstErr error
	for _, a := range addrs {
		conn, err := dial(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

func (f *Fetcher) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if ascii.EqualFold(host, "localhost") {
		// RFC 6761 §6.3: never ask DNS about localhost.
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	addrs, err := cmp.Or[Resolver](f.opts.Resolver, net.DefaultResolver).LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("safehttp: %s: no addresses", host)
	}
	return addrs, nil
}

// unwrapURLError strips *url.Error so callers see our typed errors (and
// messages without the full URL, which may carry a query they consider
// sensitive).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("safehttp: timeout: %w", ue.Err)
		}
		return ue.Err
	}
	return err
}
