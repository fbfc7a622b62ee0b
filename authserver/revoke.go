package authserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
)

// revocation is the RFC 7009 revocation endpoint.
type revocation struct {
	front       *backChannel
	tokens      *accessTokens
	refresh     RefreshTokenStore
	revocations RevocationStore
	ledger      *grantLedger
	clock       clock.Func
	log         *slog.Logger
}

// handleRevoke is the RFC 7009 revocation endpoint (requirement AS-19).
// The client authenticates as at the token endpoint (public clients by
// client_id). The answer is 200 with an empty body whether or not the token
// was known, valid, or the client's own (§2.2), so the endpoint reveals
// nothing; only the client's own tokens are actually revoked. Revoking a
// refresh token revokes its grant, so the access tokens issued from it
// become inactive for introspection too.
func (e *revocation) handleRevoke(w http.ResponseWriter, r *http.Request) {
	client, token, ok := e.front.tokenRequest(w, r, false)
	if !ok {
		return
	}
	if err := e.revoke(r.Context(), client, token); err != nil {
		e.front.errs.write(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// revoke revokes token if it is one of client's: a refresh token revokes
// its grant, an access token only itself.
func (e *revocation) revoke(ctx context.Context, client *Client, token string) error {
	if len(token) > maxTokenLength {
		return nil
	}
	rec, err := e.refresh.RefreshToken(ctx, tokenKey(token))
	switch {
	case err == nil:
		if rec.ClientID != client.ID {
			return nil
		}
		e.log.InfoContext(ctx, "refresh token revoked; revoking its grant", "client_id", client.ID)
		return e.ledger.revoke(ctx, rec.GrantID)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	claims, err := e.tokens.parse(token, e.clock.Now())
	if err != nil || claims.ClientID != client.ID {
		return nil
	}
	return e.revocations.RevokeAccessToken(ctx, claims.JTI, time.Unix(claims.Expires, 0))
}
