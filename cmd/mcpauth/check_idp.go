package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
)

const idpDescription = `

With --idp ISSUER it probes an identity provider instead, as the authorization server of an
MCP server: its metadata (found in the MCP order, issuer identical, S256, iss, Client ID
Metadata Documents, dynamic registration, keys) and, with --token (an access token it issued)
and --resource (the MCP server's URL, the audience), whether one of protect's presets accepts
the token, verified with the provider's keys. It prints the graded report, then the preset, the
protect and login flags and the provider settings that make it work. The token is sent to no one.` + idpLoginDescription

// idpFlags are check's --idp and --resource.
type idpFlags struct {
	issuer, resource string
	login            idpLoginFlags
}

func (f *idpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.issuer, "idp", "", "probe the identity provider with this issuer `URL` instead of an MCP server (no URL argument)")
	fs.StringVar(&f.resource, "resource", "", "with --idp: the MCP server's `URL`, the audience --token must name")
	f.login.register(fs)
}

// runCheckIdP is `check --idp`.
func runCheckIdP(ctx context.Context, f *checkFlags, pos []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch {
	case f.idp.issuer == "" && f.idp.login.used():
		return errors.New("--login and its client flags need --idp")
	case f.idp.issuer == "":
		return errors.New("--resource needs --idp")
	case f.idp.login.used() && !f.idp.login.on:
		return errors.New("--client-id, --client-secret, --scopes, --browser and --auth-param need --login")
	case f.idp.login.on && f.idp.resource == "":
		return errors.New("--login needs --resource: the MCP server whose metadata names the provider")
	case f.idp.login.on && f.token != "":
		return errors.New("--login obtains the token: no --token")
	case len(pos) > 0:
		return errors.New("--idp takes no URL argument")
	case f.stepUpTool != "" || f.origin != "" || f.allowedOrigin != "":
		return errors.New("--step-up-tool, --origin and --allowed-origin check an MCP server, not --idp")
	}
	if err := checkServiceURL("--idp", f.idp.issuer, f.insecureHTTP); err != nil {
		return err
	}
	if f.idp.resource != "" {
		if err := checkServiceURL("--resource", f.idp.resource, f.insecureHTTP); err != nil {
			return err
		}
	}
	token, err := readToken(f.token, stdin)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	cfg := selfcheck.IdPConfig{Issuer: f.idp.issuer, Resource: f.idp.resource, Token: token, InsecureAllowHTTPLoopback: f.insecureHTTP}
	if f.idp.login.on {
		if cfg.Login, err = idpLogin(ctx, f, stderr); err != nil {
			return err
		}
	}
	rep, err := selfcheck.RunIdP(ctx, cfg)
	if rep == nil {
		return err
	}
	return printReport(rep, err, f.json, stdout)
}
