package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
	"github.com/mcpauth/mcpauth/resource"
)

// demoProvider is the third-party provider of the demo's connect chapter.
const demoProvider = "demo-provider"

// addConnect adds the connect chapter to cfg, the configuration of the
// demo's authorization server: the identity provider and the third-party
// provider, served by d.idpMux on idpAddr. Connecting an account needs to
// know who is at the browser, so users sign in at the identity provider,
// and so see the consent page (which the narrated client's browser
// approves with a click).
func (d *demoStack) addConnect(cfg *authserver.Config, idpAddr net.Addr) error {
	const clientID = "demo-authorization-server"
	d.idp = newDemoOAuthProvider("http://"+idpAddr.String()+demoIdPPath, clientID,
		demoProviderUser{ID: "demo-user", Login: "demo-user", Name: "Demo User"}, "demo-idp-token-")
	d.provider = newDemoOAuthProvider("http://"+idpAddr.String()+demoProviderPath, clientID,
		demoProviderUser{ID: "4711", Login: "demo-user-at-provider", Name: "Demo User"}, "demo-provider-token-")
	d.idpMux = http.NewServeMux()
	d.idp.mount(d.idpMux, demoIdPPath)
	d.provider.mount(d.idpMux, demoProviderPath)
	login, err := d.idp.login()
	if err != nil {
		return err
	}
	d.closers = append(d.closers, login)
	provider, err := d.provider.login()
	if err != nil {
		return err
	}
	d.closers = append(d.closers, provider)
	cfg.Consent = authserver.ConsentPrompt
	cfg.Login = login
	cfg.Allow = authserver.AllowList{Users: []string{"demo-user"}}
	cfg.Clients = []authserver.Client{{ID: d.rsID, Secret: d.rsSecret, Name: "mcpauth demo MCP server",
		GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}}}
	cfg.VaultResourceServers = map[string]string{d.rsID: d.mcpURL}
	cfg.Connect = []authserver.ConnectProvider{{Name: demoProvider, DisplayName: "Demo Provider", Login: provider,
		Vault: upstream.VaultConfig{Keys: [][]byte{demoKey()}, Provider: provider}.Open}}
	return nil
}

// demoKey is a random 32-byte key, for this process only.
func demoKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// demoConnector is the MCP server's side: the exchange with the demo
// authorization server, as client id with secret, and the requestState
// sealer.
func demoConnector(id, secret, tokenEndpoint string) (*resource.Connector, error) {
	ex, err := resource.NewExchanger(resource.ExchangeConfig{TokenEndpoint: tokenEndpoint, ClientID: id,
		ClientSecret: secret, InsecureAllowHTTPLoopback: true})
	if err != nil {
		return nil, err
	}
	key := make([]byte, requeststate.KeySize)
	_, _ = rand.Read(key)
	used, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: 1 << 12})
	if err != nil {
		return nil, err
	}
	states, err := requeststate.New(requeststate.Config{Key: key, Replay: used})
	if err != nil {
		return nil, err
	}
	return resource.NewConnector(resource.ConnectConfig{Exchanger: ex, States: states})
}

// addConnectTool adds list_repos, which needs the user's demoProvider
// token, to s.
func addConnectTool(s *mcp.Server, conn *resource.Connector) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_repos", Description: "List the user's repositories at demo-provider (asks the user to connect it first)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			call := resource.Call{Name: req.Params.Name, Arguments: req.Params.Arguments, RequestState: req.Params.RequestState}
			if p := req.Session.InitializeParams(); p != nil {
				call.ProtocolVersion = p.ProtocolVersion
				call.URLElicitation = p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
			}
			if req.Params.InputResponses != nil {
				call.InputResponses, _ = json.Marshal(req.Params.InputResponses)
			}
			tok, err := conn.ProviderToken(ctx, demoProvider, call)
			var need *resource.ConnectRequired
			switch {
			case errors.As(err, &need) && !need.IsError():
				r := need.Result()
				res := &mcp.CallToolResult{RequestState: r.RequestState, InputRequests: mcp.InputRequestMap{}}
				for id, ir := range r.InputRequests {
					res.InputRequests[id] = &mcp.ElicitParams{Mode: ir.Params.Mode, Message: ir.Params.Message, URL: ir.Params.URL}
				}
				return res, nil, nil
			case errors.As(err, &need):
				e := need.RPCError()
				return nil, nil, &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}
			case errors.Is(err, requeststate.ErrRefused):
				return nil, nil, &jsonrpc.Error{Code: resource.CodeInvalidParams, Message: "invalid requestState"}
			case err != nil:
				return nil, nil, err
			}
			// The tool would call the provider's API with tok; the token
			// never leaves the server.
			return textResult(fmt.Sprintf("3 repositories at %s (with a %d-character provider token the host never saw)", demoProvider, len(tok.AccessToken))), nil, nil
		})
}

// narrateURLElicitation is the demo host's OnURLElicitation: it tells
// what a host shows, consents for the user, and plays the user's browser
// on the connect page (see driveConnectPage).
func narrateURLElicitation(n *narrator, d *demoStack) func(context.Context, client.URLElicitation) (bool, error) {
	return func(ctx context.Context, e client.URLElicitation) (bool, error) {
		n.say("    The server answered with a URL-mode elicitation and a sealed requestState. A host shows:")
		for _, line := range strings.Split(strings.TrimRight(describeElicitation(e), "\n"), "\n") {
			if line != "" {
				n.say("      %s", line)
			}
		}
		n.say("    The demo consents for you and plays your browser on the page, never fetched before consent")
		n.say("    (mcpauth call asks first and opens your browser).")
		if err := driveConnectPage(ctx, n, d, e.URL); err != nil {
			return false, err
		}
		n.say("    The host retries list_repos with the requestState, which the server verifies (same user, client,")
		n.say("    tool and arguments, unexpired, once) before it exchanges again:")
		return true, nil
	}
}

// driveConnectPage is the user's browser on the connect page at
// connectURL (see demoBrowser): it signs in at the identity provider,
// confirms the connection with the page's form, and authorizes at the
// provider.
func driveConnectPage(ctx context.Context, n *narrator, d *demoStack, connectURL string) error {
	b, err := newDemoBrowser(n, d, "")
	if err != nil {
		return err
	}
	n.say("    Browser: GET %s", hopName(d, mustParse(connectURL)))
	n.say("      The connect page first learns who is at the browser: it signs you in at the identity provider.")
	resp, page, err := b.do(ctx, http.MethodGet, connectURL, nil)
	if err != nil {
		return err
	}
	n.say("      Confirmation page: %q", pageLead(page))
	n.say("      The demo clicks the button; the server sends the browser to %s with a fresh state, nonce", demoProvider)
	n.say("      and PKCE challenge, and redeems the code it gets back there for the provider's tokens, kept sealed.")
	resp, page, err = b.submit(ctx, resp, page, "connect")
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("connect page: %s: %s", resp.Status, pageLead(page))
	}
	n.say("      Connect page: %s %s", resp.Status, pageLead(page))
	return nil
}

// demoBrowser plays the user's browser for the narrated client: a cookie
// jar, redirects followed on loopback only, each hop told without its
// query (which carries codes and state), forms submitted from the page's
// origin.
type demoBrowser struct {
	hc *http.Client
}

// newDemoBrowser returns a browser that stops at stop (a redirect URI),
// when not empty, and returns that redirect.
func newDemoBrowser(n *narrator, d *demoStack, stop string) (*demoBrowser, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	return &demoBrowser{hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if stop != "" && strings.HasPrefix(r.URL.String(), stop) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 || !oauthmeta.IsLoopbackHost(r.URL.Hostname()) {
				return errors.New("demo browser: redirect refused")
			}
			n.say("      -> %s", hopName(d, r.URL))
			return nil
		}}}, nil
}

// do sends one request and reads the page it ends at (at most 256 KiB).
func (b *demoBrowser) do(ctx context.Context, method, target string, form url.Values) (*http.Response, string, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", req.URL.Scheme+"://"+req.URL.Host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<10))
	return resp, string(page), nil
}

// demoFormAction and demoFormField find the form and hidden inputs of the
// authorization server's consent and connect pages.
var (
	demoFormAction = regexp.MustCompile(`<form method="post" action="([^"]*)"`)
	demoFormField  = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)"`)
)

// submit clicks the button whose value is action in the form of page,
// the page resp ended at.
func (b *demoBrowser) submit(ctx context.Context, resp *http.Response, page, action string) (*http.Response, string, error) {
	m := demoFormAction.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		return nil, "", fmt.Errorf("demo browser: %s at %s, not a page with a form: %s", resp.Status, resp.Request.URL.Path, pageLead(page))
	}
	target, err := resp.Request.URL.Parse(html.UnescapeString(m[1]))
	if err != nil {
		return nil, "", err
	}
	fields := url.Values{"action": {action}}
	for _, f := range demoFormField.FindAllStringSubmatch(page, -1) {
		fields.Set(f[1], html.UnescapeString(f[2]))
	}
	return b.do(ctx, http.MethodPost, target.String(), fields)
}

// demoAuthorizer is the narrated client's browser when the demo approves
// for the user: it signs in at the identity provider and clicks Approve
// on the consent page.
type demoAuthorizer struct {
	n *narrator
	d *demoStack
}

func (a demoAuthorizer) Authorize(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
	authURL, err := req.Start(ctx, client.DefaultRedirectURI)
	if err != nil {
		return nil, err
	}
	b, err := newDemoBrowser(a.n, a.d, client.DefaultRedirectURI)
	if err != nil {
		return nil, err
	}
	resp, page, err := b.do(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	a.n.say("      Consent page: %q The demo clicks Approve.", pageLead(page))
	resp, _, err = b.submit(ctx, resp, page, "approve")
	if err != nil {
		return nil, err
	}
	loc, err := resp.Location()
	if err != nil || !strings.HasPrefix(loc.String(), client.DefaultRedirectURI) {
		return nil, fmt.Errorf("demo browser: the consent page answered %s instead of redirecting to the client", resp.Status)
	}
	return loc, nil
}

// leadText finds the lead paragraph of a page of the authorization server.
var leadText = regexp.MustCompile(`(?s)<p[^>]*>(.*?)</p>`)

// pageLead is the first paragraph of page, as text.
func pageLead(page string) string {
	m := leadText.FindStringSubmatch(page)
	if m == nil {
		return "(no text)"
	}
	return strings.Join(strings.Fields(html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], ""))), " ")
}

// hopName names a browser hop for the narration: whose it is, and its
// URL without the query.
func hopName(d *demoStack, u *url.URL) string {
	who := "authorization server"
	switch {
	case strings.HasPrefix(u.String(), d.idp.issuer+"/"):
		who = "identity provider"
	case strings.HasPrefix(u.String(), d.provider.issuer+"/"):
		who = demoProvider
	}
	return fmt.Sprintf("%s %s://%s%s", who, u.Scheme, u.Host, u.Path)
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		return &url.URL{}
	}
	return u
}
