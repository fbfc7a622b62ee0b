package authserver

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// handleRevoke is the RFC 7009 revocation endpoint (requirement AS-19).
// The client authenticates as at the token endpoint (public clients by
// client_id). The answer is 200 with an empty body whether or not the token
// was known, valid, or the client's own (§2.2), so the endpoint reveals
// nothing; only the client's own tokens are actually revoked. Revoking a
// refresh token revokes its grant, so the access tokens issued from it
// become inactive for introspection too.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	client, token, ok := s.tokenRequest(w, r, false)
	if !ok {
		return
	}
	if err := s.revoke(r.Context(), client, token); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revoke(ctx context.Context, client *Client, token string) error {
	if len(token) > maxTokenLength {
		return nil
	}
	rec, err := s.store.RefreshTokens.RefreshToken(ctx, tokenKey(token))
	switch {
	case err == nil:
		if rec.ClientID != client.ID {
			return nil
		}
		s.log.InfoContext(ctx, "refresh token revoked; revoking its grant", "client_id", client.ID)
		return s.revokeGrant(ctx, rec.GrantID)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	claims, err := s.parseAccessToken(token, s.clock.Now())
	if err != nil || claims.ClientID != client.ID {
		return nil
	}
	return s.store.Revocations.RevokeAccessToken(ctx, claims.JTI, time.Unix(claims.Expires, 0))
}
