package selfcheck

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDetail bounds the length of a Result.Detail.
const maxDetail = 400

// Run checks the MCP server at cfg.URL and returns the report. It returns
// an error wrapping [ErrConfig], and no report, when cfg is unusable.
// Network failures and refusals are results, not errors. If ctx ends
// early, Run returns the report so far together with ctx.Err().
//
// Run sends about twenty requests, one at a time, each bounded by
// Config.Timeout; give ctx a deadline to bound the whole run. It leaves no
// idle connections or goroutines of its own behind, and is safe to call
// concurrently.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	p, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: p, report: &Report{Time: p.Now.Now()}}
	r.report.URL = r.clean(cfg.URL)
	if cfg.HTTPClient == nil {
		defer p.client.CloseIdleConnections()
	}
	defer p.fetcher.Client().CloseIdleConnections()
	steps := []func(context.Context){
		r.checkPRM,
		r.checkNoToken,
		r.checkInvalidToken,
		r.checkMalformedAuthorization,
		r.checkQueryToken,
		r.checkOrigin,
		r.checkCORS,
		r.checkValidToken,
		r.checkGet,
		r.checkStepUp,
		r.checkDelegated,
		r.checkPassthrough,
		r.checkChallengeMetadata,
		r.checkAuthServers,
		r.checkDPoP,
	}
	for _, step := range steps {
		if ctx.Err() != nil {
			return r.report, ctx.Err()
		}
		step(ctx)
	}
	return r.report, ctx.Err()
}

// runner carries the state of one Run. Steps run in order; later steps read
// what earlier ones found.
type runner struct {
	cfg    *prepared
	report *Report

	prm         *prmDoc      // metadata from the path-inserted URL, if served
	pointerPRM  *prmDoc      // metadata from the challenge's pointer, if different
	challenged  []challenge  // every 401/403 seen on authentication requests
	rpcID       int          // last JSON-RPC request id used
	noToken     http.Header  // the answer to the request without a token
	authServers []authServer // the metadata of the listed authorization servers that passed CL-07
}

// add records one result. The detail is formatted, stripped of the token,
// of control characters and of excess length.
func (r *runner) add(id, name string, st Status, format string, args ...any) {
	r.report.Results = append(r.report.Results, Result{
		ID: id, Name: name, Status: st, Detail: r.clean(fmt.Sprintf(format, args...)),
	})
}

// addEither records a pass with passDetail when ok, else bad with
// badDetail (both already formatted).
func (r *runner) addEither(ok bool, id, name, passDetail string, bad Status, badDetail string) {
	if ok {
		r.add(id, name, StatusPass, "%s", passDetail)
	} else {
		r.add(id, name, bad, "%s", badDetail)
	}
}

// redact replaces the tokens, raw and URL-encoded, in s.
func (r *runner) redact(s string) string {
	for _, t := range []string{r.cfg.Token, r.cfg.DelegatedToken} {
		if t != "" {
			s = strings.ReplaceAll(s, t, "[token]")
			s = strings.ReplaceAll(s, url.QueryEscape(t), "[token]")
		}
	}
	return s
}

// clean makes s safe to print: the token redacted, control and
// non-printable characters replaced, at most maxDetail bytes.
func (r *runner) clean(s string) string {
	s = strings.Map(func(c rune) rune {
		if c == utf8.RuneError || !unicode.IsPrint(c) {
			return '?'
		}
		return c
	}, r.redact(s))
	return truncate(s, maxDetail)
}

// quote redacts, shortens and quotes a value the server chose, for a
// detail. Redaction comes first so that shortening cannot leave a partial
// token behind.
func (r *runner) quote(s string) string {
	return fmt.Sprintf("%q", truncate(r.redact(s), 120))
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
