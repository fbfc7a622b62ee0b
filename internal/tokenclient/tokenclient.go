package tokenclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults for zero [Config] fields.
const (
	DefaultMaxBytes = 64 << 10
	DefaultTimeout  = 10 * time.Second
)

// AuthStyle is where the client credentials go.
type AuthStyle int

const (
	// AuthHeader: client_secret_basic, the form-encoded id and secret in
	// the Authorization header (RFC 6749 §2.3.1).
	AuthHeader AuthStyle = iota
	// AuthParams: client_secret_post, client_id and client_secret in the
	// body.
	AuthParams
)

// Errors of [Client.Post] and [Client.Token].
var (
	// ErrUnavailable: the endpoint could not be reached, answered 503, or
	// answered with the temporarily_unavailable error code.
	ErrUnavailable = errors.New("tokenclient: endpoint unavailable")
	// ErrResponse: the answer is too large, unreadable or not the document
	// asked for.
	ErrResponse = errors.New("tokenclient: unusable response")
)

// StatusError is a refusal: an answer other than 200, or a token response
// with an "error" member. OAuth is its RFC 6749 §5.2 error, nil when the
// body carries none.
type StatusError struct {
	StatusCode int
	OAuth      *oauthmeta.Error
}

func (e *StatusError) Error() string {
	if e.OAuth != nil {
		return fmt.Sprintf("tokenclient: status %d: %v", e.StatusCode, e.OAuth)
	}
	return fmt.Sprintf("tokenclient: status %d", e.StatusCode)
}

// Unwrap returns the OAuth error, if any.
func (e *StatusError) Unwrap() error {
	if e.OAuth == nil {
		return nil
	}
	return e.OAuth
}

// Is reports a 503 or a temporarily_unavailable refusal as [ErrUnavailable].
func (e *StatusError) Is(target error) bool {
	return target == ErrUnavailable && (e.StatusCode == http.StatusServiceUnavailable ||
		(e.OAuth != nil && e.OAuth.Code == oauthmeta.CodeTemporarilyUnavailable))
}

// Config configures a [Client].
type Config struct {
	// Endpoint is the URL requests are posted to. The caller checks it.
	Endpoint string
	// ClientID and ClientSecret authenticate the client; an empty ClientID
	// sends no credentials (a public client, or credentials in the form).
	ClientID, ClientSecret string
	// AuthStyle is where the credentials go. Zero means [AuthHeader].
	AuthStyle AuthStyle
	// HTTPClient sends the requests; redirects are never followed whatever
	// its CheckRedirect says. Nil means a client with [DefaultTimeout].
	HTTPClient *http.Client
	// MaxBytes bounds the answer read. Zero means [DefaultMaxBytes].
	MaxBytes int64
}

// Client posts forms to one endpoint. It is safe for concurrent use.
type Client struct {
	cfg Config
	hc  *http.Client
}

// New returns a Client for cfg. It does no I/O.
func New(cfg Config) *Client {
	hc := http.Client{Timeout: DefaultTimeout}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, DefaultMaxBytes)
	return &Client{cfg: cfg, hc: &hc}
}

// Response is a 200 answer.
type Response struct {
	Header http.Header
	Body   []byte
}

// Post sends form with the client's credentials and returns the 200
// answer. Another status is a [*StatusError] (with the OAuth error its
// body carries); a transport failure matches [ErrUnavailable], and an
// answer over the size cap [ErrResponse]. form is not modified.
func (c *Client) Post(ctx context.Context, form url.Values) (*Response, error) {
	if c.cfg.ClientID != "" && c.cfg.AuthStyle == AuthParams {
		f := make(url.Values, len(form)+2)
		for k, v := range form {
			f[k] = v
		}
		f.Set("client_id", c.cfg.ClientID)
		if c.cfg.ClientSecret != "" {
			f.Set("client_secret", c.cfg.ClientSecret)
		}
		form = f
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.cfg.ClientID != "" && c.cfg.AuthStyle == AuthHeader {
		req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // names the endpoint, never the form; keep the cause only
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBytes+1))
	if err != nil || int64(len(body)) > c.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: unreadable or larger than %d bytes", ErrResponse, c.cfg.MaxBytes)
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{StatusCode: resp.StatusCode}
		if oe, err := oauthmeta.ParseError(body); err == nil {
			se.OAuth = oe
		}
		return nil, se
	}
	return &Response{Header: resp.Header, Body: body}, nil
}

// tokenJSON is a token response as sent: expires_in may be a number or a
// string of digits (as some servers send it).
type tokenJSON struct {
	oauthmeta.TokenResponse
	ExpiresIn json.RawMessage `json:"expires_in"`
	Error     string          `json:"error"`
}

// Token posts form and decodes the token response (RFC 6749 §5.1): JSON,
// or form-encoded as some servers answer, with a non-empty access_token.
// A 200 answer carrying an "error" member is a [*StatusError].
func (c *Client) Token(ctx context.Context, form url.Values) (*oauthmeta.TokenResponse, error) {
	resp, err := c.Post(ctx, form)
	if err != nil {
		return nil, err
	}
	return DecodeToken(resp.Header.Get("Content-Type"), resp.Body)
}

// DecodeToken decodes a token response body of the given content type.
func DecodeToken(contentType string, body []byte) (*oauthmeta.TokenResponse, error) {
	var t tokenJSON
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/x-www-form-urlencoded", "text/plain":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("%w: malformed form-encoded token response", ErrResponse)
		}
		t.AccessToken, t.TokenType, t.RefreshToken = vals.Get("access_token"), vals.Get("token_type"), vals.Get("refresh_token")
		t.Scope, t.IssuedTokenType, t.Error = vals.Get("scope"), vals.Get("issued_token_type"), vals.Get("error")
		if e := vals.Get("expires_in"); e != "" {
			t.ExpiresIn = json.RawMessage(strconv.Quote(e))
		}
		if t.Error != "" {
			return nil, &StatusError{StatusCode: http.StatusOK, OAuth: &oauthmeta.Error{
				Code: oauthmeta.ErrorCode(t.Error), Description: vals.Get("error_description")}}
		}
	default:
		if err := jsonx.DecodeObject(body, &t); err != nil {
			return nil, fmt.Errorf("%w: malformed token response: %w", ErrResponse, err)
		}
		if t.Error != "" {
			se := &StatusError{StatusCode: http.StatusOK}
			if oe, err := oauthmeta.ParseError(body); err == nil {
				se.OAuth = oe
			}
			return nil, se
		}
	}
	if t.AccessToken == "" {
		return nil, fmt.Errorf("%w: token response without access_token", ErrResponse)
	}
	secs, err := expiresIn(t.ExpiresIn)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed expires_in", ErrResponse)
	}
	out := t.TokenResponse
	out.ExpiresIn = secs
	return &out, nil
}

// expiresIn reads "expires_in" given as a JSON number or a string of
// digits; absent or null is 0.
func expiresIn(raw json.RawMessage) (int64, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, nil
	}
	if len(s) >= 2 && s[0] == '"' {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return 0, err
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("not a non-negative integer")
	}
	return n, nil
}
