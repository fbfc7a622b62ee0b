package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"golang.org/x/oauth2"
)

func delegateCommand() command {
	return command{
		name:    "delegate",
		summary: "derive a narrower token for a sub-agent from a parent token (RFC 8693 delegation), for scripts",
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runDelegate(ctx, args, os.Stdin, stdout, stderr)
		},
	}
}

const delegateDescription = `
Exchanges a parent access token (--subject-token) at the authorization server's token endpoint
for a token the sub-agent named by the actor flags may use: its scopes (--scopes), resources
(--resource) and lifetime (--lifetime) within the parent's, the chain of actors in its "act"
claim. The actor is a registered client (--actor-client-id with --actor-key, a private_key_jwt
key), a workload (--actor-jwt, a file holding its platform token), or a DPoP key alone
(--actor-dpop-key without the others; not for a DPoP-bound parent). With --actor-dpop-key the
token is bound to that key and printed for inspection; stderr says so. The server must run with
--delegation. Only the token goes to stdout.`

type delegateFlags struct {
	tokenEndpoint, subject, issuer                      string
	actorClientID, actorKey, actorKeyID, actorJWT, dkey string
	scopes                                              string
	resources                                           listFlag
	lifetime, timeout                                   time.Duration
	insecureHTTP                                        bool
}

func runDelegate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f := &delegateFlags{}
	fs := newFlagSet("delegate", "[flags]", delegateDescription, stderr)
	f.register(fs)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	cfg, err := f.config(stdin)
	if err != nil {
		return err
	}
	d, err := client.NewDelegation(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	tok, err := d.Token(ctx)
	if err != nil {
		return err
	}
	if cfg.DPoP != nil {
		fmt.Fprintf(stderr, "This token is DPoP-bound (cnf.jkt %s): a server accepts it only with a proof signed by --actor-dpop-key.\n", cfg.DPoP.JKT())
	}
	_, err = fmt.Fprintln(stdout, tok.AccessToken)
	return err
}

func (f *delegateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tokenEndpoint, "token-endpoint", "", "the authorization server's token endpoint (required)")
	fs.StringVar(&f.subject, "subject-token", "", "the parent access token; - reads it from stdin, env:VAR from $VAR (required)")
	fs.StringVar(&f.issuer, "issuer", "", "the authorization server's issuer, the audience of --actor-key's assertions (default: the token endpoint's origin)")
	fs.StringVar(&f.actorClientID, "actor-client-id", "", "the sub-agent's client_id (a private_key_jwt client allowed the token exchange grant)")
	fs.StringVar(&f.actorKey, "actor-key", "", "PEM file of the sub-agent client's private key")
	fs.StringVar(&f.actorKeyID, "actor-key-id", "", "the key's kid in the client's JWK set")
	fs.StringVar(&f.actorJWT, "actor-jwt", "", "file holding the sub-agent's workload JWT (read afresh; a Kubernetes projected token, a CI job's OIDC token)")
	fs.StringVar(&f.dkey, "actor-dpop-key", "", "PEM file of the sub-agent's DPoP key: the token is bound to it (alone, the key is the actor)")
	fs.StringVar(&f.scopes, "scopes", "", "the scopes to keep, separated by spaces or commas (default: the parent's)")
	fs.Var(&f.resources, "resource", "a resource to keep (repeatable; default: the parent's)")
	fs.DurationVar(&f.lifetime, "lifetime", 0, "the longest the token may live (default: the server's bound, never beyond the parent's)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow a plain-http token endpoint on a loopback host")
}

// config builds the client.DelegationConfig the flags describe.
func (f *delegateFlags) config(stdin io.Reader) (client.DelegationConfig, error) {
	var cfg client.DelegationConfig
	if f.tokenEndpoint == "" || f.subject == "" {
		return cfg, fmt.Errorf("%w: --token-endpoint and --subject-token are required", errUsage)
	}
	if f.timeout <= 0 || f.lifetime < 0 {
		return cfg, fmt.Errorf("%w: --timeout must be positive and --lifetime not negative", errUsage)
	}
	subject, err := readToken(f.subject, stdin)
	if err != nil {
		return cfg, fmt.Errorf("--subject-token: %w", err)
	}
	cfg = client.DelegationConfig{TokenEndpoint: f.tokenEndpoint, Parent: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: subject}),
		Resources: f.resources, Lifetime: f.lifetime, InsecureAllowHTTPLoopback: f.insecureHTTP,
		HTTPClient: &http.Client{Timeout: f.timeout}}
	if f.scopes != "" {
		cfg.Scopes = strings.FieldsFunc(f.scopes, func(r rune) bool { return r == ' ' || r == ',' })
	}
	if f.dkey != "" {
		key, err := parseFile("--actor-dpop-key", f.dkey, jwtassert.ParsePrivateKeyPEM)
		if err != nil {
			return cfg, err
		}
		if cfg.DPoP, err = dpop.NewProver(dpop.ProverConfig{Key: key}); err != nil {
			return cfg, fmt.Errorf("--actor-dpop-key: %w", err)
		}
	}
	switch {
	case f.actorClientID != "" && f.actorJWT == "":
		if f.actorKey == "" {
			return cfg, fmt.Errorf("%w: --actor-client-id needs --actor-key", errUsage)
		}
		key, err := parseFile("--actor-key", f.actorKey, jwtassert.ParsePrivateKeyPEM)
		if err != nil {
			return cfg, err
		}
		issuer := f.issuer
		if issuer == "" {
			issuer = originOf(f.tokenEndpoint)
		}
		if cfg.Actor, err = client.ActorAssertion(client.ActorAssertionConfig{ClientID: f.actorClientID, Key: key,
			KeyID: f.actorKeyID, Issuer: issuer}); err != nil {
			return cfg, err
		}
	case f.actorJWT != "" && f.actorClientID == "" && f.actorKey == "":
		path := f.actorJWT
		cfg.Actor = client.ActorJWT(func(context.Context) (string, error) {
			return parseFile("--actor-jwt", path, func(b []byte) (string, error) {
				if s := strings.TrimSpace(string(b)); s != "" {
					return s, nil
				}
				return "", errors.New("empty file")
			})
		})
	case f.actorClientID == "" && f.actorJWT == "" && f.actorKey == "" && cfg.DPoP != nil:
		// the DPoP key alone is the actor
	default:
		return cfg, fmt.Errorf("%w: name the actor: --actor-client-id with --actor-key, --actor-jwt, or --actor-dpop-key alone", errUsage)
	}
	return cfg, nil
}

// originOf is scheme://host of an absolute URL ("" when it is not one).
func originOf(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host
}
