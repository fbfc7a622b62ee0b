package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/resource"
)

// issuerFlags are protect's --issuer flags and the per-issuer flags after
// each: --issuer-profile, --issuer-audience and the others apply to the
// --issuer before them, so
//
//	--issuer A --issuer-profile okta --issuer B --issuer-profile hydra
//
// gives A the okta preset and B the hydra one. A per-issuer flag before any
// --issuer is a usage error; a single-valued one given twice for the same
// issuer too.
type issuerFlags struct {
	list []*issuerOpts
}

// issuerOpts are the flags of one --issuer.
type issuerOpts struct {
	url     string
	profile resource.Profile
	given   map[string]bool // single-valued flags already given
}

// issuerFlagFields maps each resource.Profile field to the flag that sets
// it, for errors that name the flag.
var issuerFlagFields = []struct{ field, flag string }{
	{"Profile.Preset", "--issuer-profile"},
	{"Profile.Types", "--issuer-typ"},
	{"Profile.Audiences", "--issuer-audience"},
	{"Profile.ScopeClaims", "--issuer-scope-claims"},
	{"Profile.ClientClaim", "--issuer-client-claim"},
	{"Profile.RequiredClaims", "--issuer-require"},
	{"Profile.TenantIDs", "--issuer-tenant"},
	{"Profile.ClientIDs", "--issuer-client"},
	{"Profile.InsecureAcceptMissingAudience", "--issuer-insecure-accept-missing-audience"},
	{"Issuer", "--issuer"},
}

// register defines --issuer (collected in urls as well, for the flags that
// need the issuers' origins) and the per-issuer flags on fs.
func (f *issuerFlags) register(fs *flag.FlagSet, urls *listFlag) {
	fs.Func("issuer", "trusted authorization server `URL` (repeatable, at least one); the --issuer-* flags after it apply to it; "+
		"keys come from its metadata; {tid} in it stands for each --issuer-tenant", func(v string) error {
		*urls = append(*urls, v)
		f.list = append(f.list, &issuerOpts{url: v, given: map[string]bool{}})
		return nil
	})
	f.once(fs, "issuer-profile", "the identity provider preset `NAME` of the --issuer before it: "+strings.Join(resource.Presets(), ", ")+
		" (default: RFC 9068 tokens)", func(o *issuerOpts, v string) error {
		o.profile.Preset = v
		return nil
	})
	f.many(fs, "issuer-audience", "an aud `VALUE` naming this server for the --issuer before it, besides --resource "+
		"(an Entra API's client ID, an App ID URI, an API identifier; repeatable)", func(o *issuerOpts, v string) error {
		o.profile.Audiences = append(o.profile.Audiences, v)
		return nil
	})
	f.once(fs, "issuer-typ", "the accepted typ header `VALUES` of the --issuer before it: at+jwt, JWT, none (spaces or commas; default: the preset's, or at+jwt)",
		func(o *issuerOpts, v string) error {
			o.profile.Types = nonNil(fields(v))
			return nil
		})
	f.once(fs, "issuer-scope-claims", "the `CLAIMS` holding scopes, in order, for the --issuer before it: names, dotted paths "+
		"(realm_access.roles) or JSON Pointers (/resource_access/my.app/roles), spaces or commas (default: the preset's, or scope)",
		func(o *issuerOpts, v string) error {
			o.profile.ScopeClaims = nonNil(fields(v))
			return claimPaths(o.profile.ScopeClaims...)
		})
	f.once(fs, "issuer-client-claim", "the `CLAIM` naming the client, for the --issuer before it (default: the preset's, or client_id)",
		func(o *issuerOpts, v string) error {
			o.profile.ClientClaim = v
			return claimPaths(v)
		})
	f.many(fs, "issuer-require", "a `CLAIM=VALUE[,VALUE]` that every access token of the --issuer before it carries "+
		"(repeatable; replaces the preset's requirement for the same claim)", func(o *issuerOpts, v string) error {
		claim, values, ok := strings.Cut(v, "=")
		if !ok || claim == "" || values == "" {
			return errors.New("want CLAIM=VALUE[,VALUE]")
		}
		o.profile.RequiredClaims = append(o.profile.RequiredClaims, resource.RequiredClaim{Claim: claim, Values: strings.Split(values, ",")})
		return claimPaths(claim)
	})
	f.many(fs, "issuer-tenant", "an accepted tenant `TID` (Entra tid) of the --issuer before it (repeatable, or commas); required with {tid} in the issuer",
		func(o *issuerOpts, v string) error {
			o.profile.TenantIDs = append(o.profile.TenantIDs, fields(v)...)
			return nil
		})
	f.many(fs, "issuer-client", "an accepted client `ID` of the --issuer before it, by the client claim (repeatable, or commas; default: any client)",
		func(o *issuerOpts, v string) error {
			o.profile.ClientIDs = append(o.profile.ClientIDs, fields(v)...)
			return nil
		})
	fs.Var(&issuerBool{f: f, name: "issuer-insecure-accept-missing-audience"}, "issuer-insecure-accept-missing-audience",
		"accept tokens of the --issuer before it that have no aud at all, bound to its --issuer-client list instead "+
			"(Keycloak without an audience mapper, Cognito); tokens for another audience stay refused")
}

// once defines a per-issuer flag that may be given once per issuer.
func (f *issuerFlags) once(fs *flag.FlagSet, name, usage string, set func(*issuerOpts, string) error) {
	fs.Func(name, usage, func(v string) error {
		o, err := f.current(name)
		if err != nil {
			return err
		}
		if o.given[name] {
			return fmt.Errorf("given twice for --issuer %s", o.url)
		}
		o.given[name] = true
		return set(o, v)
	})
}

// many defines a repeatable per-issuer flag.
func (f *issuerFlags) many(fs *flag.FlagSet, name, usage string, set func(*issuerOpts, string) error) {
	fs.Func(name, usage, func(v string) error {
		o, err := f.current(name)
		if err != nil {
			return err
		}
		return set(o, v)
	})
}

// current is the issuer a per-issuer flag applies to: the last --issuer.
func (f *issuerFlags) current(name string) (*issuerOpts, error) {
	if len(f.list) == 0 {
		return nil, fmt.Errorf("--%s must follow the --issuer it applies to", name)
	}
	return f.list[len(f.list)-1], nil
}

// issuerBool is the boolean per-issuer flag.
type issuerBool struct {
	f    *issuerFlags
	name string
}

func (b *issuerBool) String() string   { return "false" }
func (b *issuerBool) IsBoolFlag() bool { return true }

func (b *issuerBool) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	o, err := b.f.current(b.name)
	if err != nil {
		return err
	}
	o.profile.InsecureAcceptMissingAudience = on
	return nil
}

// claimPaths checks claim paths as the resource package will.
func claimPaths(paths ...string) error {
	for _, p := range paths {
		if _, err := jwtverify.ParseClaimPath(p); err != nil {
			return err
		}
	}
	return nil
}

// nonNil keeps an empty list given on the command line distinct from an
// absent flag, so that resource refuses it by name.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// issuers returns the resource.Issuers the flags describe, each checked
// (URL, and its profile as resource will apply it) with errors naming the
// flag, and logs each issuer's effective token profile.
func (f *issuerFlags) issuers(insecureHTTP bool, logger *slog.Logger) ([]resource.Issuer, error) {
	var out []resource.Issuer
	for _, o := range f.list {
		// A template's URL is checked with a tenant in place of {tid}.
		if err := checkServiceURL("--issuer", strings.ReplaceAll(o.url, "{tid}", "00000000-0000-0000-0000-000000000000"), insecureHTTP); err != nil {
			return nil, err
		}
		is := resource.Issuer{Issuer: o.url, Profile: o.profile}
		e, err := is.Profile.Effective()
		if err == nil {
			_, err = is.Identifiers()
		}
		if err != nil {
			return nil, fmt.Errorf("--issuer %s: %s", o.url, flagNamed(err))
		}
		level := slog.LevelInfo
		if e.InsecureAcceptMissingAudience {
			level = slog.LevelWarn
		}
		logger.Log(context.Background(), level, "issuer token profile", "issuer", o.url, "preset", e.Preset, "typ", strings.Join(e.Types, " "),
			"audiences", strings.Join(e.Audiences, " "), "scope_claims", strings.Join(e.ScopeClaims, " "), "client_claim", e.ClientClaim,
			"required", fmt.Sprint(e.RequiredClaims), "tenants", strings.Join(e.TenantIDs, " "), "clients", strings.Join(e.ClientIDs, " "),
			"accept_missing_audience", e.InsecureAcceptMissingAudience)
		out = append(out, is)
	}
	return out, nil
}

// flagNamed rewrites a profile error to name the flag instead of the
// resource.Profile field.
func flagNamed(err error) string {
	msg := strings.TrimPrefix(err.Error(), resource.ErrInvalidConfig.Error()+": ")
	for _, m := range issuerFlagFields {
		if rest, ok := strings.CutPrefix(msg, m.field+":"); ok {
			return m.flag + ":" + rest
		}
	}
	return msg
}
