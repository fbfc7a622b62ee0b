package authserver

import (
	"io"
	"mime"
	"net/http"
	"net/url"
)

// browserFormLimit bounds the body of a form one of this server's pages
// posts (consent, provider choice, device code, connect confirmation).
const browserFormLimit = 16 << 10

// postForm returns r's application/x-www-form-urlencoded body, at most
// limit bytes, parsed by net/url, without setting any field of r (as
// r.ParseForm would: r.Body, r.Form, r.PostForm). When a handler in front
// of the server parsed the form already (r.ParseForm, r.FormValue), the
// body is consumed and r.PostForm is what it read. A body of another
// content type gives an empty form, as r.ParseForm does; a body over the
// limit an *http.MaxBytesError.
func postForm(w http.ResponseWriter, r *http.Request, limit int64) (url.Values, error) {
	if r.PostForm != nil {
		return r.PostForm, nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" || r.Body == nil {
		return url.Values{}, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, err
	}
	return url.ParseQuery(string(body))
}

// fromOwnPage reports whether a form POST came from this server's own
// page, by the fetch metadata and the Origin a browser sends; a request
// without them (no browser) passes, the CSRF token decides.
func (s *Server) fromOwnPage(r *http.Request) bool {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	return (site == "" || site == "same-origin") && (origin == "" || origin == s.cfg.issuerOrigin)
}
