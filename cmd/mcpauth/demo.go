package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func demoCommand() command {
	return command{
		name:    "demo",
		summary: "run an authorization server and a protected MCP server, and narrate a client's login",
		run:     runDemo,
	}
}

const demoDescription = `
Starts the demo authorization server and an MCP server built with the official Go SDK,
protected by mcpauth's resource middleware, with three tools:
  echo        {"message": string}, needs mcp:tools
  whoami      the identity the server validated (never the token), needs mcp:tools
  admin_echo  {"message": string}, needs mcp:admin (to show step-up)
The authorization server approves automatically (--consent consent shows the page), accepts
Dynamic Client Registration and Client ID Metadata Documents, and grants mcp:admin when asked.

Unless --no-client is given, it then runs mcpauth's client library against them and explains
each step, and exits. That run adds a fourth tool, list_repos, which needs the user's account
at a third-party provider: the authorization server then signs users in at an in-process
identity provider (so the consent page is shown; the demo approves it) and lets them connect
their account at an in-process provider, both on a loopback port of their own.
With --no-client it keeps serving until interrupted, for mcpauth login, mcpauth check or any
MCP host.`

type demoFlags struct {
	addrAS, addrMCP, consent string
	noClient                 bool
	timeout, grace           time.Duration
	log                      logFlags
}

func parseDemoFlags(args []string, stderr io.Writer) (*demoFlags, error) {
	f := &demoFlags{}
	fs := newFlagSet("demo", "[flags]", demoDescription, stderr)
	fs.StringVar(&f.addrAS, "addr-as", "127.0.0.1:9000", "authorization server listen address (loopback only; port 0 picks one)")
	fs.StringVar(&f.addrMCP, "addr-mcp", "127.0.0.1:8080", "MCP server listen address (loopback only; port 0 picks one)")
	fs.StringVar(&f.consent, "consent", "auto", "consent mode: auto (no page) or consent (an HTML page in your browser)")
	fs.BoolVar(&f.noClient, "no-client", false, "only serve; do not run the narrated client")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up on the narrated client run after this long")
	fs.DurationVar(&f.grace, "shutdown-timeout", 5*time.Second, "how long requests in flight may finish on shutdown")
	f.log.register(fs, "warn")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return nil, err
	}
	return f, nil
}

// loopbackListen listens on addr, which must be a loopback address: the
// demo speaks plain http.
func loopbackListen(flagName, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	if !oauthmeta.IsLoopbackHost(host) || host == "localhost" {
		return nil, fmt.Errorf("%s: %s is not a loopback IP address; the demo speaks plain http and binds to loopback only", flagName, addr)
	}
	return listen(flagName, addr)
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseDemoFlags(args, stderr)
	if err != nil {
		return err
	}
	consent, err := authserver.ParseConsentMode(f.consent)
	if err != nil || consent == authserver.ConsentDeny {
		return fmt.Errorf("--consent: %q is neither auto nor consent", f.consent)
	}
	logger, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	lnAS, err := loopbackListen("--addr-as", f.addrAS)
	if err != nil {
		return err
	}
	defer lnAS.Close()
	lnMCP, err := loopbackListen("--addr-mcp", f.addrMCP)
	if err != nil {
		return err
	}
	defer lnMCP.Close()
	listeners := []net.Listener{lnAS, lnMCP}
	var idpAddr net.Addr
	if !f.noClient {
		// The identity provider and the third-party provider of the
		// connect chapter listen on a port of their own, on the
		// authorization server's loopback address.
		host, _, _ := net.SplitHostPort(lnAS.Addr().String())
		lnIdP, err := loopbackListen("--addr-as", net.JoinHostPort(host, "0"))
		if err != nil {
			return err
		}
		defer lnIdP.Close()
		listeners, idpAddr = append(listeners, lnIdP), lnIdP.Addr()
	}

	var n *narrator
	if !f.noClient {
		browser := "here an HTTP client that signs in and clicks Approve"
		if consent == authserver.ConsentPrompt {
			browser = "yours: approve on the consent page"
		}
		n = newNarrator(stdout, time.Now, browser)
	}
	d, err := newDemoStack(lnAS.Addr(), lnMCP.Addr(), idpAddr, consent, !f.noClient, logger, n)
	if err != nil {
		return err
	}
	defer d.Close()
	if n != nil {
		n.attach(d)
	}
	servers := []*http.Server{streamingServer(d.asMux, logger), streamingServer(d.mcpMux, logger)}
	if d.idpMux != nil {
		servers = append(servers, streamingServer(d.idpMux, logger))
		fmt.Fprintf(stdout, "listening on %s (authorization server, consent page approved by the demo) and %s (MCP server);\n"+
			"identity provider %s, third-party provider %s\n", d.issuer, d.mcpURL, d.idp.issuer, d.provider.issuer)
	} else {
		fmt.Fprintf(stdout, "listening on %s (authorization server, consent %s) and %s (MCP server)\n", d.issuer, consent, d.mcpURL)
	}
	logger.Info("demo ready", "issuer", d.issuer, "mcp", d.mcpURL)

	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() {
		served <- serveAll(serveCtx, logger, f.grace, servers, listeners)
	}()
	if f.noClient {
		printTryByHand(stdout, d, false)
		return <-served
	}
	clientCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	clientErr := runNarratedClient(clientCtx, n, d, consent)
	stopServing()
	serveErr := <-served
	if clientErr != nil {
		if ctx.Err() != nil {
			return nil // interrupted
		}
		return fmt.Errorf("the narrated client failed: %w", clientErr)
	}
	calls, auths := n.summary()
	fmt.Fprintf(stdout, "\nDone: %d MCP requests, %d authorizations (the second one a step-up); no token, code or verifier was printed.\n", calls, auths)
	printTryByHand(stdout, d, true)
	if errors.Is(serveErr, context.Canceled) {
		serveErr = nil
	}
	return serveErr
}

// printTryByHand ends the demo with commands to run next.
func printTryByHand(w io.Writer, d *demoStack, restart bool) {
	u := d.mcpURL
	fmt.Fprintln(w, "\nTry it by hand (from a checkout, mcpauth is `go run ./cmd/mcpauth`):")
	if restart {
		fmt.Fprintln(w, "  mcpauth demo --no-client                    # keep both servers running; then, in another terminal:")
	}
	fmt.Fprintf(w, "  mcpauth login --insecure-http --browser http --scopes %s %s\n", demoScopeTools, u)
	fmt.Fprintf(w, "  mcpauth call  --insecure-http --browser http %s echo --args '{\"message\":\"hi\"}'\n", u)
	fmt.Fprintf(w, "  mcpauth check --insecure-http --token \"$(mcpauth token --insecure-http %s)\" --step-up-tool admin_echo %s\n", u, u)
	fmt.Fprintf(w, "  mcpauth call  --insecure-http --browser http %s admin_echo --args '{\"message\":\"hi\"}'   # steps up\n", u)
	fmt.Fprintf(w, "  mcpauth logout %s\n", u)
	fmt.Fprintf(w, "  client ID metadata document for --client-metadata-url: %s\n", d.clientID)
}
