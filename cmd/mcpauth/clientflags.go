package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// clientFlags are the flags of login, token, call and logout: how the
// client identifies itself, gets the user's approval and keeps tokens.
type clientFlags struct {
	clientID, clientSecret, clientMetadataURL, issuer string
	scopes, browser, store, tokenStore                string
	insecureHTTP, device                              bool
	timeout                                           time.Duration
	log                                               logFlags

	// wrapAuthorizer, when set, wraps the Authorizer --browser names
	// (the bridge bounds and shares logins with it).
	wrapAuthorizer func(client.Authorizer) client.Authorizer
	// dpopFlags are --dpop and --dpop-key, registered by the commands
	// that present tokens (login, token, call, bridge); dpop is their
	// result, nil for Bearer tokens.
	dpopFlags dpopFlags
	dpop      *client.DPoPConfig
	// onURLElicitation asks the user about a server's URL elicitation
	// (call); nil declines them.
	onURLElicitation func(context.Context, client.URLElicitation) (bool, error)
	// authParams are --auth-param: extra authorization parameters.
	authParams authParamFlags
}

// dpopFlags are --dpop and --dpop-key: the one definition login, token,
// call and bridge share.
type dpopFlags struct {
	on      bool
	keyFile string
}

func (d *dpopFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&d.on, "dpop", false, "ask for DPoP-bound tokens (RFC 9449) and present them with a fresh proof on every request; "+
		"the key, generated for an algorithm the authorization server and the MCP server both accept, is kept with the token in --store (mode 0600), "+
		"so later runs with --dpop use it. A server that requires DPoP and cannot get it is an error, never a fallback to Bearer")
	fs.StringVar(&d.keyFile, "dpop-key", "", "PEM file with the DPoP private key (ECDSA P-256/384/521, RSA 2048+ or Ed25519) instead of a generated one; "+
		"its algorithm must be one both servers accept; implies --dpop")
}

// config returns the client's DPoP configuration: nil without the flags,
// the key in --dpop-key, or a generated key per login.
func (d *dpopFlags) config() (*client.DPoPConfig, error) {
	switch {
	case d.keyFile != "":
		key, err := parseFile("--dpop-key", d.keyFile, jwtassert.ParsePrivateKeyPEM)
		if err != nil {
			return nil, err
		}
		return &client.DPoPConfig{Key: key}, nil
	case d.on:
		return &client.DPoPConfig{}, nil
	}
	return nil, nil
}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.clientID, "client-id", "", "a pre-registered client_id (default: a Client ID Metadata Document or dynamic registration)")
	fs.StringVar(&f.clientSecret, "client-secret", "", "the pre-registered client's secret; env:VAR reads $VAR (default: a public client)")
	fs.StringVar(&f.issuer, "issuer", "", "the authorization server --client-id belongs to (default: the one the server's metadata names)")
	fs.StringVar(&f.clientMetadataURL, "client-metadata-url", "", "https URL of this client's Client ID Metadata Document, used where the authorization server supports them")
	fs.StringVar(&f.scopes, "scopes", "", "scopes to ask for besides those the server's challenge names (spaces or commas)")
	fs.StringVar(&f.browser, "browser", "system", "how to get the approval: system (open the browser), print (print the URL), http (follow redirects, for auto-approving servers and scripts)")
	registerDevice(fs, &f.device)
	registerTokenStore(fs, &f.tokenStore)
	fs.StringVar(&f.store, "store", "", "token file, mode 0600 (default <user config dir>/mcpauth/tokens.json)")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow plain http to loopback hosts (the MCP server and its authorization server)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "give up after this long (includes the time you take to approve)")
	f.authParams.register(fs)
	f.log.register(fs, "warn")
}

// storePath returns --store or the default in the user's config directory.
func (f *clientFlags) storePath() (string, error) {
	if f.store != "" {
		return f.store, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no user config directory (%v): pass --store", err)
	}
	return filepath.Join(dir, "mcpauth", "tokens.json"), nil
}

// authorizer returns the Authorizer --browser names. Prompts go to stderr,
// so that stdout carries only results (the token of `mcpauth token`). The
// listener waits as long as --timeout allows, not its own default.
func (f *clientFlags) authorizer(stderr io.Writer) (client.Authorizer, error) {
	switch f.browser {
	case "system":
		return &client.Loopback{Timeout: f.timeout, Open: func(ctx context.Context, authURL string) error {
			fmt.Fprintf(stderr, "Opening your browser to approve access. If it does not open, visit:\n  %s\n", authURL)
			if err := client.OpenBrowser(ctx, authURL); err != nil {
				fmt.Fprintf(stderr, "(could not start a browser: %v)\n", err)
			}
			return nil
		}}, nil
	case "print":
		return &client.Loopback{Timeout: f.timeout, Open: client.PrintURL(stderr)}, nil
	case "http":
		return &client.FollowRedirects{}, nil
	}
	return nil, fmt.Errorf("--browser: %q is not system, print or http", f.browser)
}

// session is what the client commands share: the client and its SDK
// adapter for one MCP server.
type session struct {
	url     string
	client  *client.Client
	handler *client.OAuthHandler
	store   *grantStore
	scopes  []string
	logger  *slog.Logger
	dpop    bool // the client asks for DPoP-bound tokens
}

// open validates the flags and builds the client for serverURL.
func (f *clientFlags) open(ctx context.Context, serverURL string, stderr io.Writer) (*session, error) {
	if err := checkServiceURL("URL", serverURL, f.insecureHTTP); err != nil {
		return nil, err
	}
	logger, err := f.log.logger(stderr)
	if err != nil {
		return nil, err
	}
	path, err := f.storePath()
	if err != nil {
		return nil, err
	}
	shared, err := openStore(ctx, f.tokenStore, path, stderr)
	if err != nil {
		return nil, err
	}
	store := &grantStore{sharedStore: shared}
	a, err := f.authorizer(stderr)
	if err != nil {
		return nil, err
	}
	if f.wrapAuthorizer != nil {
		a = f.wrapAuthorizer(a)
	}
	cfg := client.Config{
		Authorizer:                a,
		Store:                     store,
		ClientIDMetadataURL:       f.clientMetadataURL,
		ClientName:                "mcpauth CLI",
		InsecureAllowHTTPLoopback: f.insecureHTTP,
		Logger:                    logger,
		DPoP:                      f.dpop,
		OnURLElicitation:          f.onURLElicitation,
	}
	if f.device {
		cfg.Authorizer, cfg.Device = nil, deviceFlow(stderr)
	}
	if f.clientID != "" {
		pre, err := f.preRegistered(ctx, serverURL)
		if err != nil {
			return nil, err
		}
		cfg.PreRegistered = []client.PreRegisteredClient{pre}
	} else if f.clientSecret != "" {
		return nil, errors.New("--client-secret needs --client-id")
	}
	if cfg.AuthServers, err = f.authParams.authServers(ctx, f.issuer, serverURL, f.insecureHTTP); err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	h, err := c.OAuthHandler(serverURL)
	if err != nil {
		return nil, err
	}
	return &session{url: serverURL, client: c, handler: h, store: store, scopes: fields(f.scopes), logger: logger, dpop: f.dpop != nil}, nil
}

// preRegistered binds --client-id to its issuer: --issuer, or the single
// authorization server the resource's metadata names (CL-18: credentials
// are bound to one issuer and never shown to another).
func (f *clientFlags) preRegistered(ctx context.Context, serverURL string) (client.PreRegisteredClient, error) {
	secret, err := secretValue("--client-secret", f.clientSecret, os.Getenv)
	if err != nil {
		return client.PreRegisteredClient{}, err
	}
	pre := client.PreRegisteredClient{Issuer: f.issuer, ClientID: f.clientID, ClientSecret: secret}
	if pre.Issuer != "" {
		return pre, checkServiceURL("--issuer", pre.Issuer, f.insecureHTTP)
	}
	issuers, err := resourceIssuers(ctx, serverURL, f.insecureHTTP)
	if err != nil {
		return pre, fmt.Errorf("--client-id without --issuer: %w", err)
	}
	if len(issuers) != 1 {
		return pre, fmt.Errorf("--client-id: the server lists %d authorization servers (%v): pass --issuer", len(issuers), issuers)
	}
	pre.Issuer = issuers[0]
	return pre, nil
}

// resourceIssuers reads the authorization servers from the resource's
// metadata at the path-inserted URL, through the SSRF-guarded fetcher.
func resourceIssuers(ctx context.Context, serverURL string, insecureHTTP bool) ([]string, error) {
	mdURL, err := oauthmeta.ProtectedResourceMetadataURL(serverURL)
	if err != nil {
		return nil, err
	}
	fetcher := safehttp.New(safehttp.Options{InsecureAllowHTTPLoopback: insecureHTTP, Timeout: 10 * time.Second})
	defer fetcher.Client().CloseIdleConnections()
	resp, err := fetcher.Get(ctx, mdURL, "application/json")
	if err != nil {
		return nil, fmt.Errorf("protected resource metadata: %w", err)
	}
	md, err := oauthmeta.ParseProtectedResourceMetadata(resp.Body)
	if err != nil {
		return nil, err
	}
	if err := md.Validate(serverURL, oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: insecureHTTP}); err != nil {
		return nil, err
	}
	return md.AuthorizationServers, nil
}

// scopeTransport adds the --scopes to the scope of every Bearer challenge
// the server sends, so that the client library, which asks for the
// challenged scopes, asks for them too. It changes nothing else.
type scopeTransport struct {
	base   http.RoundTripper
	scopes []string
}

func (t *scopeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	challenges, perr := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...)
	if perr != nil {
		return resp, nil
	}
	values := make([]string, 0, len(challenges))
	for _, c := range challenges {
		if ascii.EqualFold(c.Scheme, "Bearer") {
			c = withScopes(c, t.scopes)
		}
		values = append(values, c.String())
	}
	resp.Header["Www-Authenticate"] = values
	return resp, nil
}

// withScopes returns c with extra added to its scope parameter.
func withScopes(c oauthmeta.Challenge, extra []string) oauthmeta.Challenge {
	scopes := c.Scopes()
	for _, s := range extra {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	params := slices.Clone(c.Params)
	for i, p := range params {
		if ascii.EqualFold(p.Name, oauthmeta.ParamScope) {
			params[i].Value = oauthmeta.FormatScope(scopes)
			c.Params = params
			return c
		}
	}
	c.Params = append(params, oauthmeta.Param{Name: oauthmeta.ParamScope, Value: oauthmeta.FormatScope(scopes)})
	return c
}
