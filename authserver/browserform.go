package authserver

import "net/http"

// browserFormLimit bounds the body of a form one of this server's pages
// posts (consent, provider choice, device code, connect confirmation).
const browserFormLimit = 16 << 10

// fromOwnPage reports whether a form POST came from this server's own
// page, by the fetch metadata and the Origin a browser sends; a request
// without them (no browser) passes, the CSRF token decides.
func (s *Server) fromOwnPage(r *http.Request) bool {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	return (site == "" || site == "same-origin") && (origin == "" || origin == s.cfg.issuerOrigin)
}
