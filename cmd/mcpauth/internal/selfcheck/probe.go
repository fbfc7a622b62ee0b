package selfcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/bridge"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// protocolVersion is the MCP revision the requests are written for.
const protocolVersion = "2026-07-28"

// probe describes one request to the server under test.
type probe struct {
	method string // HTTP method; empty means POST
	url    string // empty means Config.URL
	rpc    string // JSON-RPC method of the POST body; empty means no body
	tool   string // tool name, for tools/call
	auth   string // Authorization header value; empty sends none
	origin string // Origin header; empty sends none
	header http.Header
	noBody bool // do not read the body (it may be an endless event stream)
}

// exchange is what came back: a status, headers and at most MaxBodyBytes of
// body (truncated says there was more), or the transport error.
type exchange struct {
	status    int
	header    http.Header
	body      []byte
	truncated bool
	err       error
}

func (e exchange) is2xx() bool { return e.err == nil && e.status >= 200 && e.status < 300 }

// send performs one request with the bounded client.
func (r *runner) send(ctx context.Context, pr probe) exchange {
	method, target := pr.method, pr.url
	if method == "" {
		method = http.MethodPost
	}
	if target == "" {
		target = r.cfg.URL
	}
	var body io.Reader
	if pr.rpc != "" {
		body = bytes.NewReader(r.rpcBody(pr.rpc, pr.tool))
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return exchange{err: errors.New("cannot build request")}
	}
	for k, vs := range pr.header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", "mcpauth-check")
	if pr.rpc != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
		req.Header.Set("Mcp-Method", pr.rpc)
		if pr.tool != "" {
			req.Header.Set("Mcp-Name", bridge.HeaderValue(pr.tool))
		}
	}
	if pr.auth != "" {
		req.Header.Set("Authorization", pr.auth)
	}
	if pr.origin != "" {
		req.Header.Set("Origin", pr.origin)
	}
	resp, err := r.cfg.client.Do(req)
	if err != nil {
		return exchange{err: stripURL(err)}
	}
	defer resp.Body.Close()
	ex := exchange{status: resp.StatusCode, header: resp.Header}
	if !pr.noBody {
		ex.body, err = io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
		if err != nil {
			ex.err = stripURL(err)
		}
		if len(ex.body) > MaxBodyBytes {
			ex.body, ex.truncated = ex.body[:MaxBodyBytes], true
		}
	}
	return ex
}

// stripURL removes the *url.Error wrapper, whose message holds the request
// URL (and so, for the query-string check, a token).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// rpcBody is a 2026-07-28 request: no session, the protocol version and
// client description in _meta on every request.
func (r *runner) rpcBody(method, tool string) []byte {
	r.rpcID++
	type params struct {
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Meta      map[string]any  `json:"_meta"`
	}
	p := params{Meta: map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocolVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "mcpauth-check", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}}
	if method == "tools/call" {
		p.Name, p.Arguments = tool, json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}{"2.0", r.rpcID, method, p})
	return b
}

// bearer returns the Bearer challenge of a response, whether there was one,
// and whether the WWW-Authenticate header was malformed.
func bearer(ex exchange) (ch oauthmeta.Challenge, found, malformed bool) {
	values := ex.header.Values("WWW-Authenticate")
	if len(values) == 0 {
		return ch, false, false
	}
	all, err := oauthmeta.ParseChallenges(values...)
	if err != nil {
		return ch, false, true
	}
	if ch, found = oauthmeta.FindChallenge(all, "Bearer"); found {
		return ch, true, false
	}
	ch, found = oauthmeta.FindChallenge(all, "DPoP") // RFC 9449 §7.1: the same parameters
	return ch, found, false
}

// describe summarises a response for a detail: the status and the
// WWW-Authenticate header, quoted.
func (r *runner) describe(ex exchange) string {
	if ex.err != nil {
		return "request failed: " + ex.err.Error()
	}
	values := ex.header.Values("WWW-Authenticate")
	if len(values) == 0 {
		return fmt.Sprintf("%d, no WWW-Authenticate", ex.status)
	}
	return fmt.Sprintf("%d, WWW-Authenticate %s", ex.status, r.quote(strings.Join(values, ", ")))
}

// rpcOutcome reads a JSON-RPC response from a JSON or event-stream body:
// ok when it carries a result, else a description of the error.
func (r *runner) rpcOutcome(ex exchange) (ok bool, what string) {
	mt, _, _ := mime.ParseMediaType(ex.header.Get("Content-Type"))
	data := ex.body
	if mt == "application/json" && ex.truncated {
		return true, "response over the size cap (not inspected)"
	}
	if mt == "text/event-stream" {
		data = nil
		sc := bufio.NewScanner(bytes.NewReader(ex.body))
		for sc.Scan() {
			if d, found := strings.CutPrefix(sc.Text(), "data:"); found {
				data = []byte(strings.TrimSpace(d))
				break
			}
		}
	} else if mt != "application/json" {
		return false, "Content-Type " + r.quote(mt) + ", not a JSON-RPC response"
	}
	var msg struct {
		Result oauthmeta.RawJSON `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := jsonx.DecodeObject(data, &msg); err != nil {
		return false, "body is not a JSON-RPC response"
	}
	if msg.Error != nil {
		return false, fmt.Sprintf("JSON-RPC error %d %s", msg.Error.Code, r.quote(msg.Error.Message))
	}
	if len(msg.Result) == 0 {
		return false, "JSON-RPC response without result"
	}
	return true, "JSON-RPC result"
}
