package client

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// MaxElicitationRounds bounds how often one call is retried after URL
// elicitations (by [Client.ElicitationMiddleware], and by a host that
// retries on its own).
const MaxElicitationRounds = 3

// Bounds of URL elicitations.
const (
	// codeURLElicitationRequired is the 2025-11-25 error that carries URL
	// elicitations.
	codeURLElicitationRequired = -32042
	// maxElicitationData bounds the error data read; maxElicitations the
	// elicitations in it.
	maxElicitationData = 16 << 10
	maxElicitations    = 4
	// maxElicitationMessage bounds the message shown, in runes.
	maxElicitationMessage = 500
)

// URLElicitation is an MCP server's request that the user open a URL, out
// of band, to give the server something the MCP client must not see (for
// example to connect an account at a third party). [Config.OnURLElicitation]
// receives it after the URL passed the rules of [OpenBrowser].
type URLElicitation struct {
	// Server is the MCP server that asks (its canonical URL).
	Server string
	// ID is the elicitation's ID (elicitationId, 2025-11-25); empty for a
	// 2026-07-28 elicitation.
	ID string
	// Message is the server's explanation, with control characters
	// replaced and cut to a bounded length: safe to print.
	Message string
	// URL is the URL to open, exactly as it must be shown and opened.
	URL string
	// Host is the URL's host (and port), as written: highlight it.
	Host string
	// Warnings are reasons for the user to look twice: an
	// internationalized (Punycode) or non-ASCII host, a host other than
	// the server's authorization server, plain http.
	Warnings []string
}

// ElicitationHandler returns a Go SDK elicitation handler for the MCP
// server at serverURL (mcp.ClientOptions.ElicitationHandler): URL-mode
// elicitations go to [Config.OnURLElicitation], and its answer back to the
// server; form-mode ones are declined. With a 2026-07-28 server the SDK
// then retries the call with the server's requestState. Declare
// mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL:
// &mcp.URLElicitationCapabilities{}}} beside it.
func (c *Client) ElicitationHandler(serverURL string) (func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), error) {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req == nil || req.Params == nil || req.Params.Mode != "url" {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		ok, err := c.askURL(ctx, resource, req.Params.ElicitationID, req.Params.Message, req.Params.URL)
		switch {
		case err != nil:
			return nil, err
		case ok:
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}, nil
}

// ElicitationMiddleware returns Go SDK sending middleware
// (mcp.Client.AddSendingMiddleware) for a 2025-11-25 server at serverURL,
// which answers a call needing URL elicitations with the -32042 error:
// each elicitation goes to [Config.OnURLElicitation], and once the user
// accepted and finished them all the call is sent again (at most a few
// times). A declined elicitation, or data that is not a list of URL
// elicitations, leaves the error as it was.
func (c *Client) ElicitationMiddleware(serverURL string) (mcp.Middleware, error) {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			for round := 0; ; round++ {
				res, err := next(ctx, method, req)
				var rpcErr *jsonrpc.Error
				if err == nil || round >= MaxElicitationRounds || !errors.As(err, &rpcErr) || rpcErr.Code != codeURLElicitationRequired ||
					(method != "tools/call" && method != "prompts/get" && method != "resources/read") {
					return res, err
				}
				els, ok := parseURLElicitations(rpcErr.Data)
				if !ok {
					return res, err
				}
				for _, el := range els {
					accepted, aerr := c.askURL(ctx, resource, el.ElicitationID, el.Message, el.URL)
					if aerr != nil {
						return nil, aerr
					}
					if !accepted {
						return res, err
					}
				}
			}
		}
	}, nil
}

// wireElicitation is a URL elicitation as an error's data carries it.
type wireElicitation struct {
	Mode          string `json:"mode"`
	Message       string `json:"message"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
}

// parseURLElicitations reads the data of a -32042 error: a bounded,
// non-empty list of URL-mode elicitations.
func parseURLElicitations(data []byte) ([]wireElicitation, bool) {
	if len(data) == 0 || len(data) > maxElicitationData {
		return nil, false
	}
	var d struct {
		Elicitations []wireElicitation `json:"elicitations"`
	}
	if oauthmeta.DecodeJSON(data, &d) != nil || len(d.Elicitations) == 0 || len(d.Elicitations) > maxElicitations {
		return nil, false
	}
	for _, el := range d.Elicitations {
		if el.Mode != "url" {
			return nil, false
		}
	}
	return d.Elicitations, true
}

// askURL checks a URL elicitation and hands it to the host: a URL the
// browser rules refuse is declined without asking anyone.
func (c *Client) askURL(ctx context.Context, resource, id, message, raw string) (bool, error) {
	if c.cfg.OnURLElicitation == nil {
		return false, nil
	}
	e, ok := c.checkURL(ctx, resource, id, message, raw)
	if !ok {
		return false, nil
	}
	return c.cfg.OnURLElicitation(ctx, e)
}

// checkURL applies the browser rules to a URL elicitation and describes
// it for the user; false for a URL that must not be shown as a link.
func (c *Client) checkURL(ctx context.Context, resource, id, message, raw string) (URLElicitation, bool) {
	if err := checkBrowserURL(raw); err != nil {
		c.logWarn("url elicitation refused", "server", resource, "reason", err.Error())
		return URLElicitation{}, false
	}
	u, _ := url.Parse(raw)
	e := URLElicitation{Server: resource, ID: printable(id, 200), Message: printable(message, maxElicitationMessage),
		URL: raw, Host: u.Host}
	e.Warnings = c.urlWarnings(ctx, resource, u)
	return e, true
}

// URLElicitations reads the data of a -32042 error (URL elicitation
// required, MCP 2025-11-25) from the MCP server at serverURL, for a host
// that relays the error rather than acting on it (a stdio bridge): the
// URL elicitations it lists that pass the rules of [OpenBrowser], each
// with its host and warnings as [Config.OnURLElicitation] would get it.
// Data that is not a bounded list of URL-mode elicitations gives none.
func (c *Client) URLElicitations(ctx context.Context, serverURL string, data []byte) []URLElicitation {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return nil
	}
	els, ok := parseURLElicitations(data)
	if !ok {
		return nil
	}
	var out []URLElicitation
	for _, el := range els {
		if e, ok := c.checkURL(ctx, resource, el.ElicitationID, el.Message, el.URL); ok {
			out = append(out, e)
		}
	}
	return out
}

// urlWarnings are the reasons to look twice at u.
func (c *Client) urlWarnings(ctx context.Context, resource string, u *url.URL) []string {
	var w []string
	host := u.Hostname()
	if !isASCII(host) {
		w = append(w, "the host name has non-ASCII characters, which can imitate another name")
	}
	for label := range strings.SplitSeq(host, ".") {
		if strings.HasPrefix(ascii.ToLower(label), "xn--") {
			w = append(w, "the host name is internationalized (Punycode): it can imitate another name")
			break
		}
	}
	if d, err := c.store.Discovery(ctx, resource); err == nil && d.Issuer != "" {
		if iss, err := url.Parse(d.Issuer); err == nil && !ascii.EqualFold(iss.Hostname(), host) {
			w = append(w, "the page is not at the server's authorization server ("+iss.Host+")")
		}
	} else {
		w = append(w, "the server's authorization server is unknown: check the host yourself")
	}
	if u.Scheme == "http" {
		w = append(w, "plain http: only for a server on this machine")
	}
	return w
}

func (c *Client) logWarn(msg string, args ...any) {
	if c.cfg.Logger != nil {
		c.cfg.Logger.Warn(msg, args...)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// printable replaces control characters (terminal escapes among them) and
// invalid UTF-8 in s and cuts it to max runes.
func printable(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if n == max {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
