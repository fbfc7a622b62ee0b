package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// workloadFlags are authserver's flags for workload rules, trusted
// issuers found by discovery, and delegation by token exchange.
type workloadFlags struct {
	rules, discovery, mayAct listFlag
	delegation, refuseBound  bool
	maxDepth                 int
	delegationTTL            time.Duration
}

func (w *workloadFlags) register(fs *flag.FlagSet) {
	fs.Var(&w.rules, "workload-rule", "which workloads of a --trusted-issuer get tokens: `issuer=ISSUER[,sub=PATTERN][,aud=AUD][,claim=NAME=PATTERN]...,resource=URI...,scope=S...` "+
		"(repeatable; a workload issuer without a rule issues nothing; PATTERN as path.Match, * never crosses /; NAME a path such as kubernetes.io/namespace)")
	fs.Var(&w.discovery, "trusted-issuer-discovery", "accept workload identity JWTs from `ISSUER`, its keys found by OpenID Connect Discovery (repeatable; needs --workload-rule)")
	fs.BoolVar(&w.delegation, "delegation", false, "let token exchange with actor_token derive narrower tokens for sub-agents (RFC 8693 delegation chains)")
	fs.IntVar(&w.maxDepth, "delegation-max-depth", 0, fmt.Sprintf("longest actor chain of a delegated token (default %d)", authserver.DefaultDelegationDepth))
	fs.DurationVar(&w.delegationTTL, "delegation-ttl", 0, "lifetime bound of a delegated token, never beyond its parent's (default --token-ttl)")
	fs.BoolVar(&w.refuseBound, "delegation-refuse-dpop-bound", false, "refuse to delegate DPoP-bound tokens (default: bind the delegated token to the actor's DPoP key)")
	fs.Var(&w.mayAct, "delegation-may-act", "only `HOLDER=ACTOR` may act for the tokens HOLDER (a client_id or an actor) holds; they carry it as may_act (repeatable)")
}

// apply adds the discovery issuers, the rules and the delegation settings
// to cfg, whose TrustedIssuers the --trusted-issuer flags already hold.
func (w *workloadFlags) apply(cfg *authserver.Config) error {
	for _, iss := range w.discovery {
		cfg.TrustedIssuers = append(cfg.TrustedIssuers, authserver.TrustedIssuer{Issuer: iss, Discover: true})
	}
	for _, spec := range w.rules {
		iss, rule, err := parseWorkloadRule(spec)
		if err != nil {
			return err
		}
		i := trustedWorkloadIssuer(cfg.TrustedIssuers, iss)
		if i < 0 {
			return fmt.Errorf("--workload-rule: %q is not a --trusted-issuer or --trusted-issuer-discovery", iss)
		}
		cfg.TrustedIssuers[i].Rules = append(cfg.TrustedIssuers[i].Rules, rule)
	}
	if !w.delegation {
		if w.maxDepth != 0 || w.delegationTTL != 0 || w.refuseBound || len(w.mayAct) > 0 {
			return fmt.Errorf("--delegation-* flags need --delegation")
		}
		return nil
	}
	d := &authserver.DelegationConfig{MaxDepth: w.maxDepth, TokenTTL: w.delegationTTL, RefuseDPoPBound: w.refuseBound}
	for _, spec := range w.mayAct {
		holder, actor, err := cutPair("--delegation-may-act", spec, "HOLDER=ACTOR")
		if err != nil {
			return err
		}
		if d.MayAct == nil {
			d.MayAct = map[string]oauthmeta.Actor{}
		}
		d.MayAct[holder] = oauthmeta.Actor{Subject: actor}
	}
	cfg.Delegation = d
	return nil
}

// trustedWorkloadIssuer returns the index of the workload issuer iss.
func trustedWorkloadIssuer(list []authserver.TrustedIssuer, iss string) int {
	for i := range list {
		if list[i].Issuer == iss && list[i].Kind == authserver.GrantWorkload {
			return i
		}
	}
	return -1
}

// parseWorkloadRule parses one --workload-rule value.
func parseWorkloadRule(spec string) (string, authserver.WorkloadRule, error) {
	var iss string
	var r authserver.WorkloadRule
	for part := range strings.SplitSeq(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return "", r, fmt.Errorf("--workload-rule: %q is not key=value", part)
		}
		switch k {
		case "issuer":
			iss = v
		case "sub":
			r.Subject = v
		case "aud":
			r.Audience = v
		case "claim":
			name, pattern, ok := strings.Cut(v, "=")
			if !ok || name == "" || pattern == "" {
				return "", r, fmt.Errorf("--workload-rule: claim %q is not NAME=PATTERN", v)
			}
			if r.Claims == nil {
				r.Claims = map[string]string{}
			}
			r.Claims[name] = pattern
		case "resource":
			r.Resources = append(r.Resources, v)
		case "scope":
			r.Scopes = append(r.Scopes, v)
		default:
			return "", r, fmt.Errorf("--workload-rule: unknown key %q", k)
		}
	}
	if iss == "" {
		return "", r, fmt.Errorf("--workload-rule: issuer= is required")
	}
	return iss, r, nil
}
