package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
)

func loginCommand() command {
	return command{name: "login", summary: "log in to an MCP server (OAuth 2.1 with PKCE) and keep the token", run: runLogin}
}

func tokenCommand() command {
	return command{name: "token", summary: "print an access token for an MCP server (refreshed if needed), for scripts", run: runToken}
}

func callCommand() command {
	return command{name: "call", summary: "call a tool of an MCP server and print the result as JSON",
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runCall(ctx, args, os.Stdin, stdout, stderr)
		}}
}

const clientDescription = `
mcpauth's client library as a command: it finds the server's authorization server from its
401 challenge and metadata, registers (a Client ID Metadata Document, dynamic registration or
--client-id), authorizes with PKCE and RFC 9207 issuer checks, and keeps tokens per server in
--store. A 403 insufficient_scope leads to one step-up authorization with the union of scopes.`

const dpopDescription = `
With --dpop (or --dpop-key) the tokens are DPoP-bound (RFC 9449): the proof algorithm is one the
authorization server and the MCP server both accept, a generated key is kept with its token in
--store, and every request carries a fresh proof. Pass --dpop to every command that uses the
token. A server that accepts only DPoP-bound tokens when none can be had is an error before any
authorization request, never a fallback to Bearer.`

// withDPoP registers --dpop and --dpop-key (the commands that present
// tokens).
func withDPoP(f *clientFlags, fs *flag.FlagSet) { f.dpopFlags.register(fs) }

// clientCommand parses the shared client flags plus the command's own and
// opens the session for the URL argument. The returned ctx ends after
// --timeout: everything the command does, the wait for the user's approval
// included, must use it. finish releases it and, when the command failed
// because the time ran out, says so.
func clientCommand(ctx context.Context, name, synopsis, description string, args []string, stderr io.Writer,
	extra func(*clientFlags, *flag.FlagSet), minPos, maxPos int) (*session, []string, context.Context, func(error) error, error) {
	f := &clientFlags{}
	fs := newFlagSet(name, synopsis, description+"\n"+clientDescription, stderr)
	f.register(fs)
	if extra != nil {
		extra(f, fs)
	}
	pos, err := parseArgs(fs, args, minPos, maxPos)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if f.timeout <= 0 {
		return nil, nil, nil, nil, fmt.Errorf("--timeout must be positive")
	}
	if f.dpop, err = f.dpopFlags.config(); err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	finish := func(err error) error {
		expired := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil && expired {
			return fmt.Errorf("gave up after --timeout %s: %w", f.timeout, err)
		}
		return err
	}
	s, err := f.open(ctx, pos[0], stderr)
	if err != nil {
		return nil, nil, nil, nil, finish(err)
	}
	return s, pos, ctx, finish, nil
}

// mcpHTTPClient is the SDK transport's HTTP client: the client library's
// (no credentials on a redirect to another origin, DPoP proofs), with
// --scopes added to challenges (see scopeTransport); no overall timeout,
// since responses may be long event streams bounded by the command's
// context.
func (s *session) mcpHTTPClient() (*http.Client, func()) {
	base := &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	var rt http.RoundTripper = base
	if len(s.scopes) > 0 {
		rt = &scopeTransport{base: base, scopes: s.scopes}
	}
	return s.handler.HTTPClient(rt), func() { base.CloseIdleConnections(); s.client.CloseIdleConnections() }
}

// connect opens an MCP session through the SDK with the client's
// OAuthHandler: any 401 or 403 on the way is handled by the client library.
func (s *session) connect(ctx context.Context, opts *mcp.ClientOptions, mw ...mcp.Middleware) (*mcp.ClientSession, func(), error) {
	hc, closeIdle := s.mcpHTTPClient()
	mc := mcp.NewClient(&mcp.Implementation{Name: "mcpauth", Version: "1.0.0"}, opts)
	mc.AddSendingMiddleware(mw...)
	cs, err := mc.Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: s.url, OAuthHandler: &firstFailure{OAuthHandler: s.handler}, HTTPClient: hc,
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		closeIdle()
		return nil, nil, fmt.Errorf("connect to %s: %w", s.url, err)
	}
	return cs, func() { cs.Close(); closeIdle() }, nil
}

// firstFailure is the SDK's OAuthHandler for one command: once an
// authorization failed (the authorization server refused the code or the
// client, the user denied access, ...), every later 401 or 403 gets that
// same error instead of a new authorization. The SDK retries a failed
// server/discover with initialize whatever the error, so without it a
// refusal would be followed by a second approval prompt, and the command
// would end with the timeout's "context deadline exceeded" instead of the
// authorization server's error code and description.
type firstFailure struct {
	*client.OAuthHandler
	mu  sync.Mutex
	err error
}

// Authorize implements auth.OAuthHandler.
func (h *firstFailure) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		resp.Body.Close()
		return h.err
	}
	h.err = h.OAuthHandler.Authorize(ctx, req, resp)
	return h.err
}

// login authorizes: by the library's Login (scopes from the server's
// scopes_supported) or, with --scopes, through a first MCP request whose
// challenge carries them.
func (s *session) login(ctx context.Context) error {
	if len(s.scopes) == 0 {
		defer s.client.CloseIdleConnections()
		return s.client.Login(ctx, s.url)
	}
	_, done, err := s.connect(ctx, nil)
	if err != nil {
		return err
	}
	done()
	return nil
}

func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	s, _, ctx, finish, err := clientCommand(ctx, "login", "[flags] URL",
		"Log in to the MCP server at URL and keep the token (a fresh authorization every time)."+dpopDescription, args, stderr, withDPoP, 1, 1)
	if err != nil {
		return err
	}
	defer func() { err = finish(err) }()
	if err := s.logout(ctx, stderr); err != nil {
		return err
	}
	if err := s.login(ctx); err != nil {
		return err
	}
	tok, err := s.token(ctx)
	if err != nil || tok == nil {
		return fmt.Errorf("no token after login: %v", err)
	}
	fmt.Fprintf(stdout, "logged in to %s", s.url)
	// The issuer and scope the client stored with the token, not claims
	// read from it: an access token need not be a JWT, nor have a "scope"
	// claim (Ory Hydra's carry "scp").
	if g, ok := s.store.lastGrant(); ok {
		fmt.Fprintf(stdout, " (issuer %s", g.issuer)
		if len(g.scopes) > 0 {
			fmt.Fprintf(stdout, ", scope %q", strings.Join(g.scopes, " "))
		}
		fmt.Fprint(stdout, ")")
	}
	if jkt := dpopBinding(jwtPayload(tok.AccessToken)); jkt != "" {
		fmt.Fprintf(stdout, "; DPoP-bound to key %s", jkt)
	}
	if !tok.Expiry.IsZero() {
		fmt.Fprintf(stdout, "; the access token expires at %s", tok.Expiry.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(stdout)
	return nil
}

// grantStore is the token file, noting the issuer and granted scopes of
// the last token the client stored in it: those of the token response
// (its scope, or, when it has none, the scopes asked for: RFC 6749 §5.1),
// which login prints.
type grantStore struct {
	sharedStore
	mu   sync.Mutex
	last grant
	put  bool
}

type grant struct {
	issuer string
	scopes []string
}

// PutToken implements tokenstore.Store.
func (s *grantStore) PutToken(ctx context.Context, k tokenstore.Key, t *tokenstore.Token) error {
	if err := s.sharedStore.PutToken(ctx, k, t); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.put = grant{issuer: k.Issuer, scopes: slices.Clone(t.Scopes)}, true
	return nil
}

// lastGrant returns what the last PutToken stored, false before any.
func (s *grantStore) lastGrant() (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.put
}

// token returns the stored access token, refreshed if needed, or nil when
// there is none. With DPoP a bound token is handed out too: the commands
// show it, they never send it without a proof.
func (s *session) token(ctx context.Context) (*oauth2.Token, error) {
	if s.dpop {
		s.handler.HTTPClient(nil) // a DPoP-bound token may leave TokenSource: it is only printed
	}
	ts, err := s.handler.TokenSource(ctx)
	if err != nil || ts == nil {
		return nil, err
	}
	return ts.Token()
}

// dpopBinding returns the cnf.jkt of a JWT access token's claims (RFC
// 9449 §6.1), "" for a token that is not DPoP-bound or not a JWT.
func dpopBinding(claims map[string]any) string {
	cnf, _ := claims["cnf"].(map[string]any)
	jkt, _ := cnf["jkt"].(string)
	return jkt
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	s, _, ctx, finish, err := clientCommand(ctx, "token", "[flags] URL",
		"Print only the access token for the MCP server at URL, refreshed if needed (logging in first if there is none).\n"+
			"A DPoP-bound token (--dpop) is printed for inspection: it is useless without a proof signed by its key,\n"+
			"which stays in --store; stderr says when the token is bound."+dpopDescription,
		args, stderr, withDPoP, 1, 1)
	if err != nil {
		return err
	}
	defer func() { err = finish(err) }()
	defer s.client.CloseIdleConnections()
	tok, err := s.token(ctx)
	if err != nil {
		return err
	}
	if tok == nil {
		if err := s.login(ctx); err != nil {
			return err
		}
		if tok, err = s.token(ctx); err != nil || tok == nil {
			return fmt.Errorf("no token after login: %v", err)
		}
	}
	if jkt := dpopBinding(jwtPayload(tok.AccessToken)); jkt != "" {
		fmt.Fprintf(stderr, "This token is DPoP-bound (cnf.jkt %s): printed for inspection only, a server accepts it only with a proof signed by its key, which stays in the token store.\n", jkt)
	}
	_, err = fmt.Fprintln(stdout, tok.AccessToken)
	return err
}

// errToolFailed: the tool answered with isError (exit status 1).
var errToolFailed = errors.New("the tool reported an error")

func runCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	var rawArgs string
	prompt := newConnectPrompt(stdin, stderr)
	s, pos, ctx, finish, err := clientCommand(ctx, "call", "[flags] URL TOOL [--args JSON]",
		"Call TOOL on the MCP server at URL and print the result as JSON. Progress notifications go to stderr.\nThe exit status is 1 when the tool reports an error."+dpopDescription+connectDescription,
		args, stderr, func(f *clientFlags, fs *flag.FlagSet) {
			fs.StringVar(&rawArgs, "args", "{}", "the tool's arguments, a JSON object")
			withDPoP(f, fs)
			prompt.register(fs)
			f.onURLElicitation = prompt.ask
		}, 2, 2)
	if err != nil {
		return err
	}
	if err := prompt.check(); err != nil {
		return finish(err)
	}
	defer func() { err = finish(err) }()
	var toolArgs map[string]any
	if err := json.Unmarshal([]byte(rawArgs), &toolArgs); err != nil || toolArgs == nil {
		return fmt.Errorf("--args: not a JSON object")
	}
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			fmt.Fprintf(stderr, "progress %v/%v %s\n", p.Progress, p.Total, p.Message)
		},
	}
	legacy, err := prompt.sdkOptions(s.client, s.url, opts)
	if err != nil {
		return err
	}
	cs, done, err := s.connect(ctx, opts, legacy)
	if err != nil {
		return err
	}
	defer done()
	params := &mcp.CallToolParams{Name: pos[1], Arguments: toolArgs}
	params.SetProgressToken("mcpauth-call")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", pos[1], err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	if res.IsError {
		return errToolFailed
	}
	return nil
}
