// Package httpform reads the application/x-www-form-urlencoded body of a
// request without changing the request: the handler gets the form as a
// value, where r.ParseForm would set r.Body, r.Form and r.PostForm on the
// request it was given.
package httpform

import (
	"io"
	"mime"
	"net/http"
	"net/url"
)

// Post returns r's application/x-www-form-urlencoded body, at most limit
// bytes, parsed by net/url, without setting any field of r. When a handler
// in front parsed the form already (r.ParseForm, r.FormValue), the body is
// consumed and r.PostForm is what it read. A body of another content type
// gives an empty form, as r.ParseForm does; a body over the limit an
// *http.MaxBytesError (w learns that the connection is to be closed).
func Post(w http.ResponseWriter, r *http.Request, limit int64) (url.Values, error) {
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
