package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
)

func checkCommand() command {
	return command{
		name:    "check",
		summary: "test how any MCP server guards its endpoint with OAuth (pass/warn/fail per requirement)",
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runCheck(ctx, args, os.Stdin, stdout, stderr)
		},
	}
}

const checkDescription = `
Sends the requests an MCP client and an attacker would send to the MCP endpoint at URL and
grades each answer against one requirement of the MCP 2026-07-28 authorization and transport
specifications (IDs as in docs/requirements.md): the RFC 9728 metadata at the path-inserted
URL with a resource identical to URL, the 401 challenge without a token (resource_metadata,
no error), 401 invalid_token for a garbage token, no token accepted from the query string,
a foreign Origin refused, every listed authorization server's metadata (S256, iss, Client ID
Metadata Documents), and DPoP: supported or required, the algorithms of the metadata against
the DPoP challenge's algs=, and an authorization server that accepts one of them. With --token also a valid call, and with --step-up-tool the 403
insufficient_scope grammar. The exit status is 1 when any check fails.

The token is sent only to URL (once in the query string, to prove it is refused there: use a
short-lived token) and never printed.`

type checkFlags struct {
	token, stepUpTool, origin, allowedOrigin string
	delegatedToken                           string
	json, insecureHTTP                       bool
	timeout                                  time.Duration
	idp                                      idpFlags // --idp ISSUER [--resource URL]
}

// errChecksFailed: the report has failures (exit status 1).
var errChecksFailed = errors.New("checks failed")

func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f := &checkFlags{}
	fs := newFlagSet("check", "[flags] URL | --idp ISSUER [--resource URL --token T | --resource URL --login]", checkDescription+idpDescription, stderr)
	fs.StringVar(&f.token, "token", "", "a valid access token for URL; - reads it from stdin, env:VAR from $VAR (default: the checks that need one are skipped)")
	fs.StringVar(&f.delegatedToken, "delegated-token", "", "an access token for URL obtained by delegation (an act claim, as `mcpauth delegate` prints), to report how the server treats delegated tokens; env:VAR reads $VAR")
	fs.StringVar(&f.stepUpTool, "step-up-tool", "", "a tool the token lacks the scope for, to check the 403 insufficient_scope challenge")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow plain http to loopback hosts (URL and the authorization servers it names)")
	fs.StringVar(&f.origin, "origin", "", "a foreign Origin the server must refuse (default "+selfcheck.DefaultOrigin+")")
	fs.StringVar(&f.allowedOrigin, "allowed-origin", "", "an Origin the server accepts, to check CORS (default: URL's origin)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up after this long")
	f.idp.register(fs)
	pos, err := parseArgs(fs, args, 0, 1)
	if err != nil {
		return err
	}
	if f.idp.issuer != "" || f.idp.resource != "" || f.idp.login.used() {
		return runCheckIdP(ctx, f, pos, stdin, stdout, stderr)
	}
	if len(pos) != 1 {
		fmt.Fprintf(fs.Output(), "missing arguments\n")
		fs.Usage()
		return errUsage
	}
	if err := checkServiceURL("URL", pos[0], f.insecureHTTP); err != nil {
		return err
	}
	token, err := readToken(f.token, stdin)
	if err != nil {
		return err
	}
	delegated, err := secretValue("--delegated-token", f.delegatedToken, os.Getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rep, err := selfcheck.Run(ctx, selfcheck.Config{
		URL:                       pos[0],
		Token:                     token,
		DelegatedToken:            delegated,
		StepUpTool:                f.stepUpTool,
		Origin:                    f.origin,
		AllowedOrigin:             f.allowedOrigin,
		InsecureAllowHTTPLoopback: f.insecureHTTP,
	})
	if rep == nil {
		return err
	}
	return printReport(rep, err, f.json, stdout)
}

// readToken resolves --token: "-" reads one line from stdin, env:VAR reads
// $VAR, anything else is the token.
func readToken(v string, stdin io.Reader) (string, error) {
	if v != "-" {
		return secretValue("--token", v, os.Getenv)
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--token -: %w", err)
	}
	if line = strings.TrimSpace(line); line == "" {
		return "", errors.New("--token -: nothing on stdin")
	}
	return line, nil
}

// checkReport is what both kinds of check print: a report of graded rows.
type checkReport interface {
	WriteTable(io.Writer) error
	Failed() bool
}

// printReport prints rep as JSON or as a table, then returns runErr, or
// errChecksFailed when a row failed.
func printReport(rep checkReport, runErr error, asJSON bool, stdout io.Writer) error {
	if asJSON {
		out, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(out))
	} else if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if rep.Failed() {
		return errChecksFailed
	}
	return nil
}
