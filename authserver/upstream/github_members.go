package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/safehttp"
)

// Limits of the GitHub membership check ([GitHubAllow]).
const (
	// githubPerPage is the page size asked of /user/orgs and /user/teams.
	githubPerPage = 100
	// maxGitHubPages bounds the pages read from each: a user with more
	// memberships than 1,000 is refused, never admitted on a partial list.
	maxGitHubPages = 10
	// maxGitHubPageBytes caps each page (a team entry is about 3 KiB).
	maxGitHubPageBytes = 1 << 20
	// githubOrgScope is the scope that lets the token list private
	// memberships.
	githubOrgScope = "read:org"
)

// GitHubAllow admits only the members of listed GitHub organisations or
// teams: a user who belongs to none of them is refused (access_denied),
// whatever the server's allow-list says. It is checked at each login with
// the user's access token, at UserInfoEndpoint followed by "/orgs" (for
// Orgs) and "/teams" (for Teams), as GitHub's
// https://api.github.com/user/orgs and /user/teams, read page by page
// (100 entries a page, at most 10 pages of up to 1 MiB each, within
// [Config.Timeout] in all). The login asks for the read:org scope, without
// which GitHub lists only public memberships, and refuses a token that
// was not granted it.
//
// It fails closed: an answer that is not an array of well-formed entries,
// too large, or longer than 10 pages refuses the login (access_denied); a
// GitHub that fails (5xx) or is too slow gives temporarily_unavailable.
//
// The memberships read (organisations when Orgs is set, teams when Teams
// is) then also are groups of the identity, in lower case: "org" for each
// organisation and "org/team-slug" for each team, for the allow-list's and
// grant policy's group rules (which compare exactly).
type GitHubAllow struct {
	// Orgs are organisation logins ("acme"), compared ASCII
	// case-insensitively, as GitHub does: "ACME" is "acme", but no
	// Unicode folding applies.
	Orgs []string
	// Teams are "org/team-slug" ("acme/platform"), compared the same way.
	Teams []string
}

var (
	// githubLogin is an organisation login: letters, digits and single
	// hyphens, at most 39 characters.
	githubLogin = regexp.MustCompile(`^[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}$`)
	// githubSlug is a team slug.
	githubSlug = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
)

// check validates the lists.
func (a *GitHubAllow) check() error {
	if len(a.Orgs)+len(a.Teams) == 0 {
		return configErr("Upstream.OAuth2.GitHubAllow", "list Orgs or Teams (nil GitHubAllow means no membership rule)")
	}
	for _, o := range a.Orgs {
		if !githubLogin.MatchString(o) {
			return configErr("Upstream.OAuth2.GitHubAllow.Orgs", fmt.Sprintf("%.60q is not a GitHub organisation login", o))
		}
	}
	for _, t := range a.Teams {
		org, slug, ok := strings.Cut(t, "/")
		if !ok || !githubLogin.MatchString(org) || !githubSlug.MatchString(slug) {
			return configErr("Upstream.OAuth2.GitHubAllow.Teams", fmt.Sprintf("%.60q is not org/team-slug", t))
		}
	}
	return nil
}

// githubOrg is an entry of /user/orgs; githubTeam of /user/teams.
type (
	githubOrg struct {
		Login string `json:"login"`
	}
	githubTeam struct {
		Slug         string     `json:"slug"`
		Organization *githubOrg `json:"organization"`
	}
)

// githubMembers checks the user's memberships against rules, and adds them
// to id's groups.
func (u *oauth2Provider) githubMembers(ctx context.Context, tok *oauth2.Token, id *authserver.UpstreamIdentity) error {
	rules := u.endpoints.GitHubAllow
	if !grantedScope(tok, githubOrgScope) {
		return fmt.Errorf("%w: the token was not granted %s", errUserInfo, githubOrgScope)
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	auth := http.Header{"Authorization": {"Bearer " + tok.AccessToken}}
	var groups []string
	if len(rules.Orgs) > 0 {
		err := u.githubPages(ctx, "/orgs", auth, func(body []byte) (int, error) {
			var page []githubOrg
			if err := jsonx.DecodeArray(body, &page); err != nil {
				return 0, err
			}
			for _, o := range page {
				if !githubLogin.MatchString(o.Login) {
					return 0, fmt.Errorf("organisation login %.60q", o.Login)
				}
				groups = append(groups, ascii.ToLower(o.Login))
			}
			return len(page), nil
		})
		if err != nil {
			return err
		}
	}
	if len(rules.Teams) > 0 {
		err := u.githubPages(ctx, "/teams", auth, func(body []byte) (int, error) {
			var page []githubTeam
			if err := jsonx.DecodeArray(body, &page); err != nil {
				return 0, err
			}
			for _, t := range page {
				if t.Organization == nil || !githubLogin.MatchString(t.Organization.Login) || !githubSlug.MatchString(t.Slug) {
					return 0, fmt.Errorf("team %.60q without a well-formed organisation and slug", t.Slug)
				}
				groups = append(groups, ascii.ToLower(t.Organization.Login+"/"+t.Slug))
			}
			return len(page), nil
		})
		if err != nil {
			return err
		}
	}
	for _, g := range groups {
		if !slices.Contains(id.Groups, g) {
			id.Groups = append(id.Groups, g)
		}
	}
	if !slices.ContainsFunc(groups, rules.admits) {
		return fmt.Errorf("%w: %w", errUserInfo, errNotMember)
	}
	return nil
}

// errNotMember refuses a user outside every listed organisation and team.
var errNotMember = errors.New("not a member of an allowed GitHub organisation or team")

// admits reports whether the membership g ("org" or "org/team", lower
// case) is one of a's.
func (a *GitHubAllow) admits(g string) bool {
	eq := func(rule string) bool { return ascii.EqualFold(rule, g) }
	if strings.Contains(g, "/") {
		return slices.ContainsFunc(a.Teams, eq)
	}
	return slices.ContainsFunc(a.Orgs, eq)
}

// githubPages reads the pages of UserInfoEndpoint+suffix, handing each body
// to read, which returns its number of entries; a page shorter than
// githubPerPage is the last.
func (u *oauth2Provider) githubPages(ctx context.Context, suffix string, auth http.Header, read func([]byte) (int, error)) error {
	base, err := url.Parse(u.endpoints.UserInfoEndpoint + suffix)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errUserInfo, suffix, err)
	}
	for page := 1; page <= maxGitHubPages; page++ {
		q := base.Query()
		q.Set("per_page", strconv.Itoa(githubPerPage))
		q.Set("page", strconv.Itoa(page))
		base.RawQuery = q.Encode()
		resp, err := u.membersFetcher.GetWithHeader(ctx, base.String(), "application/json", auth)
		if err != nil {
			return classifyFetch("github"+suffix, err)
		}
		n, err := read(resp.Body)
		switch {
		case err != nil:
			return fmt.Errorf("%w: github%s: %w", errUserInfo, suffix, err)
		case n > githubPerPage:
			return fmt.Errorf("%w: github%s: more than %d entries on a page", errUserInfo, suffix, githubPerPage)
		case n < githubPerPage:
			return nil
		}
	}
	return fmt.Errorf("%w: github%s: more than %d pages", errUserInfo, suffix, maxGitHubPages)
}

// grantedScope reports whether the token response's "scope" (GitHub:
// comma-separated) grants want, read:org, or write:org or admin:org, which
// include it.
func grantedScope(tok *oauth2.Token, want string) bool {
	s, _ := tok.Extra("scope").(string)
	for _, g := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		if g == want || g == "write:org" || g == "admin:org" {
			return true
		}
	}
	return false
}

// membersFetcherOptions are opts for the membership pages: no redirects,
// 1 MiB a page.
func membersFetcherOptions(opts safehttp.Options) safehttp.Options {
	opts.MaxBytes, opts.MaxRedirects = maxGitHubPageBytes, 0
	return opts
}
