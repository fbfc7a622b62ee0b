package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Paths of the admin API under the issuer.
const (
	pathAdminGrants = "/admin/grants"
	pathAdminRevoke = "/admin/grants/revoke"
	// MinAdminTokenBytes is the least length of [AdminConfig.Token].
	MinAdminTokenBytes = 32
)

// AdminConfig turns on the admin API, with which an operator lists and
// revokes a user's grants (and connected accounts):
//
//	GET  {issuer}/admin/grants?sub=SUBJECT
//	     200 {"sub": ..., "grants": [AdminGrant...], "connected_accounts": [AdminAccount...]}
//	POST {issuer}/admin/grants/revoke   {"sub": SUBJECT[, "grant_id": ID]}
//	     200 {"revoked_grants": n, "revoked_accounts": m}
//
// Every request needs "Authorization: Bearer" with Token; anything else
// gets 401, and the admin API is rate-limited per client address like the
// token endpoint. Revoking a grant ends its refresh tokens at once and
// makes its access tokens inactive at introspection (self-contained
// access tokens stay valid at resource servers until they expire, at most
// AccessTokenTTL). Without grant_id, every grant of the user is revoked,
// and every connected account.
type AdminConfig struct {
	// Token is the admin bearer token: at least [MinAdminTokenBytes]
	// random bytes, compared in constant time with its SHA-256. REQUIRED.
	Token string
	// Accounts, when set, lists a user's connected accounts beside the
	// grants and revokes them with all of the user's grants. Nil means
	// the listing has none.
	Accounts AdminAccounts
}

// AdminAccounts is the admin API's view of the accounts a user connected
// at other services.
type AdminAccounts interface {
	// ListAccounts returns the accounts of subject.
	ListAccounts(ctx context.Context, subject string) ([]AdminAccount, error)
	// RevokeAccount disconnects the account id of subject.
	RevokeAccount(ctx context.Context, subject, id string) error
}

// AdminAccount is one connected account in the admin API's listing. It
// never holds a token.
type AdminAccount struct {
	ID        string    `json:"id"`
	Provider  string    `json:"provider"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// AdminGrant is one grant in the admin API's listing. It never holds a
// token or the ID of upstream tokens.
type AdminGrant struct {
	ID        string    `json:"id"`
	ClientID  string    `json:"client_id"`
	Scopes    []string  `json:"scopes,omitempty"`
	Resources []string  `json:"resources,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Revoked   bool      `json:"revoked,omitempty"`
	// DPoPBound says the grant's refresh tokens are bound to a DPoP key.
	DPoPBound bool `json:"dpop_bound,omitempty"`
	// Upstream says the grant holds the user's tokens at the login
	// provider, which revoking it deletes.
	Upstream bool `json:"upstream_tokens,omitempty"`
}

// AdminListing is the answer of the admin API's listing.
type AdminListing struct {
	Subject           string         `json:"sub"`
	Grants            []AdminGrant   `json:"grants"`
	ConnectedAccounts []AdminAccount `json:"connected_accounts"`
}

// AdminRevocation is the answer of the admin API's revocation.
type AdminRevocation struct {
	RevokedGrants   int `json:"revoked_grants"`
	RevokedAccounts int `json:"revoked_accounts"`
}

// admin serves the admin API.
type admin struct {
	tokenHash [sha256.Size]byte
	lister    GrantLister
	ledger    *grantLedger
	accounts  AdminAccounts
	realm     string
	now       func() time.Time
	maxBody   int64
	log       interface {
		InfoContext(ctx context.Context, msg string, args ...any)
		ErrorContext(ctx context.Context, msg string, args ...any)
	}
}

// newAdmin validates cfg against the grant store.
func newAdmin(cfg *AdminConfig, grants GrantStore) (*admin, error) {
	if len(cfg.Token) < MinAdminTokenBytes {
		return nil, configErr("Admin.Token", "must be at least 32 bytes")
	}
	lister, ok := grants.(GrantLister)
	if !ok {
		return nil, configErr("Admin", "the grant store cannot list grants (it does not implement GrantLister)")
	}
	return &admin{tokenHash: sha256.Sum256([]byte(cfg.Token)), lister: lister, accounts: cfg.Accounts}, nil
}

// authorized checks the request's bearer token, answering 401 when it is
// missing or wrong.
func (a *admin) authorized(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if ok && ascii.EqualFold(scheme, "Bearer") && len(r.Header.Values("Authorization")) == 1 {
		h := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(h[:], a.tokenHash[:]) == 1 {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+a.realm+` admin", error="invalid_token"`)
	writeJSON(w, http.StatusUnauthorized, oauthErr(oauthmeta.CodeInvalidToken, "the admin API needs the admin token"))
	return false
}

func (a *admin) handleList(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		return
	}
	sub := r.URL.Query().Get("sub")
	if sub == "" || len(r.URL.Query()["sub"]) != 1 {
		writeJSON(w, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "sub is required, once"))
		return
	}
	out, err := a.list(r.Context(), sub)
	if err != nil {
		a.fail(w, r, "listing grants failed", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *admin) list(ctx context.Context, sub string) (*AdminListing, error) {
	gs, err := a.lister.GrantsBySubject(ctx, sub, a.now(), MaxListedGrants)
	if err != nil {
		return nil, err
	}
	out := &AdminListing{Subject: sub, Grants: make([]AdminGrant, 0, len(gs)), ConnectedAccounts: []AdminAccount{}}
	for _, g := range gs {
		out.Grants = append(out.Grants, AdminGrant{ID: g.ID, ClientID: g.ClientID, Scopes: g.Scopes, Resources: g.Resources,
			CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt, Revoked: g.Revoked, DPoPBound: g.DPoPJKT != "",
			Upstream: g.UpstreamTokens != ""})
	}
	if a.accounts != nil {
		accts, err := a.accounts.ListAccounts(ctx, sub)
		if err != nil {
			return nil, err
		}
		out.ConnectedAccounts = append(out.ConnectedAccounts, accts...)
	}
	return out, nil
}

func (a *admin) handleRevoke(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		return
	}
	var req struct {
		Subject string `json:"sub"`
		GrantID string `json:"grant_id"`
	}
	body := http.MaxBytesReader(w, r.Body, a.maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Subject == "" {
		writeJSON(w, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, `want {"sub": ..., "grant_id": ...} with sub`))
		return
	}
	ctx := r.Context()
	gs, err := a.lister.GrantsBySubject(ctx, req.Subject, a.now(), MaxListedGrants)
	if err != nil {
		a.fail(w, r, "listing grants failed", err)
		return
	}
	var out AdminRevocation
	found := false
	for _, g := range gs {
		if req.GrantID != "" && g.ID != req.GrantID {
			continue
		}
		found = true
		if g.Revoked {
			continue
		}
		if err := a.ledger.revoke(ctx, g.ID); err != nil {
			a.fail(w, r, "revoking a grant failed", err)
			return
		}
		out.RevokedGrants++
	}
	if req.GrantID != "" && !found {
		writeJSON(w, http.StatusNotFound, oauthErr(oauthmeta.CodeInvalidRequest, "the user has no such grant"))
		return
	}
	if req.GrantID == "" && a.accounts != nil {
		accts, err := a.accounts.ListAccounts(ctx, req.Subject)
		if err != nil {
			a.fail(w, r, "listing connected accounts failed", err)
			return
		}
		for _, acct := range accts {
			if err := a.accounts.RevokeAccount(ctx, req.Subject, acct.ID); err != nil {
				a.fail(w, r, "revoking a connected account failed", err)
				return
			}
			out.RevokedAccounts++
		}
	}
	a.log.InfoContext(ctx, "admin revoked grants", "sub", req.Subject, "grant_id", req.GrantID,
		"grants", out.RevokedGrants, "accounts", out.RevokedAccounts)
	writeJSON(w, http.StatusOK, out)
}

func (a *admin) fail(w http.ResponseWriter, r *http.Request, msg string, err error) {
	a.log.ErrorContext(r.Context(), msg, "err", err)
	code := oauthmeta.CodeServerError
	if oe := (*oauthmeta.Error)(nil); errors.As(err, &oe) && oe.Code == oauthmeta.CodeTemporarilyUnavailable {
		code = oe.Code
	}
	writeJSON(w, statusFor(code), oauthErr(code, ""))
}
