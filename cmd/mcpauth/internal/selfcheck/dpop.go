package selfcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// dpopView is what the resource tells about DPoP (RFC 9449 §7.1, RFC
// 9728 §2): in its metadata and in its challenge to a request without a
// token.
type dpopView struct {
	metaAlgs     []string // dpop_signing_alg_values_supported
	metaRequired bool     // dpop_bound_access_tokens_required
	challenge    bool     // a DPoP challenge
	bearer       bool     // a Bearer challenge
	challAlgs    []string // the DPoP challenge's algs; nil when absent
}

func (v dpopView) offered() bool {
	return v.challenge || v.metaRequired || len(v.metaAlgs) > 0
}

func (v dpopView) required() bool { return v.metaRequired || (v.challenge && !v.bearer) }

// algs are the algorithms a client must choose from: the challenge's,
// else the metadata's; nil when neither says.
func (v dpopView) algs() []string {
	if v.challAlgs != nil {
		return v.challAlgs
	}
	return v.metaAlgs
}

func (r *runner) dpopView() dpopView {
	var v dpopView
	doc := r.prm
	if doc == nil {
		doc = r.pointerPRM
	}
	if doc != nil {
		v.metaAlgs, v.metaRequired = doc.meta.DPoPSigningAlgValuesSupported, doc.meta.DPoPBoundAccessTokensRequired
	}
	all, err := oauthmeta.ParseChallenges(r.noToken.Values("WWW-Authenticate")...)
	if err != nil {
		return v
	}
	_, v.bearer = oauthmeta.FindChallenge(all, "Bearer")
	var ch oauthmeta.Challenge
	if ch, v.challenge = oauthmeta.FindChallenge(all, "DPoP"); v.challenge {
		if a, ok := ch.Get(oauthmeta.ParamAlgs); ok {
			v.challAlgs = strings.Fields(a)
		}
	}
	return v
}

// checkDPoP grades what the resource says about DPoP (RS-27): whether it
// is supported or required, the algorithms in the metadata against those
// of the challenge, and whether a listed authorization server accepts one
// of them. A resource that does not mention DPoP gets one skipped line.
func (r *runner) checkDPoP(context.Context) {
	const (
		nameMode = "DPoP support"
		nameReq  = "DPoP requirement in metadata and challenge agree"
		nameAlgs = "DPoP algs in metadata and challenge agree"
		nameAS   = "authorization server accepts a DPoP alg of the resource"
	)
	v := r.dpopView()
	if !v.offered() {
		r.add("RS-27", nameMode, StatusSkip, "no DPoP challenge and no DPoP metadata: Bearer tokens only")
		return
	}
	mode := "supported beside Bearer tokens"
	if v.required() {
		mode = "required: only DPoP-bound tokens are accepted"
	}
	r.add("RS-27", nameMode, StatusPass, "%s", mode)
	switch {
	case r.noToken == nil:
		r.add("RS-27", nameReq, StatusSkip, "no answer to the request without a token")
	case v.metaRequired && v.bearer:
		r.add("RS-27", nameReq, StatusWarn, "the metadata says dpop_bound_access_tokens_required but the 401 offers a Bearer challenge")
	case v.metaRequired && !v.challenge:
		r.add("RS-27", nameReq, StatusWarn, "the metadata says dpop_bound_access_tokens_required but the 401 has no DPoP challenge")
	case v.required() && !v.metaRequired && r.prm != nil:
		r.add("RS-27", nameReq, StatusWarn, "the 401 offers only a DPoP challenge but the metadata lacks dpop_bound_access_tokens_required; clients that read only the metadata ask for Bearer tokens")
	default:
		r.add("RS-27", nameReq, StatusPass, "")
	}
	r.checkDPoPAlgs(nameAlgs, v)
	r.checkDPoPAuthServers(nameAS, v)
}

func (r *runner) checkDPoPAlgs(name string, v dpopView) {
	meta, chall := strings.Join(v.metaAlgs, " "), strings.Join(v.challAlgs, " ")
	switch {
	case !v.challenge:
		r.add("RS-27", name, StatusWarn, "the metadata lists %s but the 401 has no DPoP challenge", r.quote(meta))
	case len(v.metaAlgs) == 0 && v.challAlgs == nil:
		r.add("RS-27", name, StatusWarn, "neither the metadata nor the challenge names algorithms; clients guess")
	case len(v.metaAlgs) == 0:
		r.add("RS-27", name, StatusWarn, "the metadata lacks dpop_signing_alg_values_supported; the challenge says algs=%s", r.quote(chall))
	case v.challAlgs == nil:
		r.add("RS-27", name, StatusWarn, "the challenge has no algs; the metadata lists %s", r.quote(meta))
	case !sameSet(v.metaAlgs, v.challAlgs):
		r.add("RS-27", name, StatusWarn, "the metadata lists %s, the challenge algs=%s; clients that read one may pick an algorithm the other refuses",
			r.quote(meta), r.quote(chall))
	default:
		r.add("RS-27", name, StatusPass, "%s", r.quote(meta))
	}
}

// checkDPoPAuthServers: some listed authorization server advertises an
// algorithm the resource accepts (RFC 9449 §5.1). Without one, a client
// cannot obtain a token the resource accepts when it requires DPoP.
func (r *runner) checkDPoPAuthServers(name string, v dpopView) {
	if len(r.authServers) == 0 {
		r.add("RS-27", name, StatusSkip, "no authorization server metadata")
		return
	}
	bad := StatusWarn
	if v.required() {
		bad = StatusFail
	}
	rs := v.algs()
	var notes []string
	for _, as := range r.authServers {
		asAlgs := as.meta.DPoPSigningAlgValuesSupported
		if len(asAlgs) == 0 {
			notes = append(notes, fmt.Sprintf("%s advertises no dpop_signing_alg_values_supported", r.quote(as.issuer)))
			continue
		}
		common := slices.DeleteFunc(slices.Clone(asAlgs), func(a string) bool { return rs != nil && !slices.Contains(rs, a) })
		if len(common) > 0 {
			r.add("RS-27", name, StatusPass, "%s: %s", r.quote(as.issuer), r.quote(strings.Join(common, " ")))
			return
		}
		notes = append(notes, fmt.Sprintf("%s lists %s", r.quote(as.issuer), r.quote(strings.Join(asAlgs, " "))))
	}
	r.add("RS-27", name, bad, "no common algorithm with the resource's %s: %s", r.quote(strings.Join(rs, " ")), strings.Join(notes, "; "))
}

// sameSet reports whether a and b hold the same names, in any order.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}
