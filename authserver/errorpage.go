package authserver

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// errorView is what the HTML error page shows.
type errorView struct {
	Code, Description, Issuer, StylesheetURL string
}

// renderError shows an HTML error page instead of redirecting: used when
// the client or redirect URI cannot be trusted (requirements AS-05,
// CIMD-07) and for consent form failures. The page never links or
// redirects anywhere.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, oe *oauthmeta.Error) {
	noteRefusal(r.Context(), oe.Code, status >= 500)
	s.writePage(w, status, "error.html", errorView{
		Code:          string(oe.Code),
		Description:   oe.Description,
		Issuer:        s.cfg.Issuer,
		StylesheetURL: s.cfg.issuerPath + pathAssets,
	}, "")
}

// writePage renders an HTML page with the headers that keep it from being
// framed, cached, or running anything (requirement AS-14): a CSP without
// script sources, frame-ancestors 'none', X-Frame-Options DENY. formAction
// is an extra CSP form-action source (the client's redirect origin).
func (s *Server) writePage(w http.ResponseWriter, status int, name string, data any, formAction string) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("rendering page failed", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	csp := "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
	if formAction != "" {
		csp += " " + formAction
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer browsers send
	// "Origin: null" on the form POST, which the consent check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderStoreError renders the page for a failed store call: the store's
// own protocol error (temporarily_unavailable when it is down or full),
// or a logged, bare server_error.
func (s *Server) renderStoreError(w http.ResponseWriter, r *http.Request, msg string, err error) {
	if oe, ok := errors.AsType[*oauthmeta.Error](err); ok {
		s.renderError(w, r, statusFor(oe.Code), oe)
		return
	}
	s.log.ErrorContext(r.Context(), msg, "err", err)
	s.renderError(w, r, http.StatusInternalServerError, oauthErr(oauthmeta.CodeServerError, "internal error"))
}
