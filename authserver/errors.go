package authserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Sentinel errors. Protocol errors sent to clients are *oauthmeta.Error
// values (RFC 6749 §5.2); these are for the Go API.
var (
	// ErrConfig: a [Config] is invalid; New returns it wrapped with the
	// field at fault.
	ErrConfig = errors.New("authserver: invalid configuration")
	// ErrNotFound: a store has no record under the key. Store
	// implementations return it (wrapped or not) for every miss.
	ErrNotFound = errors.New("authserver: not found")
	// ErrAlreadyUsed: an authorization code was already redeemed, or a
	// refresh token was already rotated. Store implementations return it
	// from [CodeStore.RedeemCode] and [RefreshTokenStore.RotateRefreshToken].
	ErrAlreadyUsed = errors.New("authserver: already used")
	// ErrClosed: the server or store was closed.
	ErrClosed = errors.New("authserver: closed")
)

// ignoreNotFound is err, or nil when err is [ErrNotFound].
func ignoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func configErr(field, msg string) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, msg)
}

// oauthErr returns the protocol error for code with a description that
// must never contain a token, code or secret.
func oauthErr(code oauthmeta.ErrorCode, desc string) *oauthmeta.Error {
	return &oauthmeta.Error{Code: code, Description: desc}
}

// statusFor maps an error code to its HTTP status (RFC 6749 §5.2, RFC 7009
// §2.2.1, RFC 7591 §3.2.2): invalid_client is 401, server_error 500,
// temporarily_unavailable 503, every other code 400.
func statusFor(code oauthmeta.ErrorCode) int {
	switch code {
	case oauthmeta.CodeInvalidClient:
		return http.StatusUnauthorized
	case oauthmeta.CodeServerError:
		return http.StatusInternalServerError
	case oauthmeta.CodeTemporarilyUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadRequest
	}
}

// errorWriter is the one writer of JSON error responses, shared by the
// token, introspection, revocation and registration endpoints.
type errorWriter struct {
	log *slog.Logger
	// realm is the Basic challenge's realm: the issuer, without quotes
	// or backslashes.
	realm string
}

func newErrorWriter(log *slog.Logger, issuer string) *errorWriter {
	return &errorWriter{log: log, realm: strings.NewReplacer(`"`, "", `\`, "").Replace(issuer)}
}

// write answers with err. A *oauthmeta.Error is sent as is; anything else
// is logged and answered with a bare server_error, so internal detail
// never reaches the client. invalid_client carries a Basic challenge
// (RFC 6749 §5.2).
func (e *errorWriter) write(w http.ResponseWriter, r *http.Request, err error) {
	oe, ok := errors.AsType[*oauthmeta.Error](err)
	if !ok {
		e.log.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "err", err)
		oe = oauthErr(oauthmeta.CodeServerError, "internal error")
	}
	noteRefusal(r.Context(), oe.Code, !ok || oe.Code == oauthmeta.CodeTemporarilyUnavailable)
	status := statusFor(oe.Code)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+e.realm+`", charset="UTF-8"`)
	}
	writeJSON(w, status, oe)
}

// writeJSON writes v as the JSON body with Cache-Control: no-store, as every
// response carrying tokens, credentials or errors needs (RFC 6749 §5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"server_error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
