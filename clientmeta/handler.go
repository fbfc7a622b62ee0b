package clientmeta

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// DefaultHandlerMaxAge is the Cache-Control max-age a [Handler] sends when
// [HandlerConfig.MaxAge] is zero.
const DefaultHandlerMaxAge = time.Hour

// HandlerConfig configures [NewHandler].
type HandlerConfig struct {
	// Document is the client's own metadata document. REQUIRED; it must
	// pass [Document.Validate] against its own client_id (an https URL
	// with a path, client_name, redirect_uris, no shared secret).
	Document *Document
	// MaxAge is the Cache-Control max-age sent to authorization servers.
	// Zero means [DefaultHandlerMaxAge]; it is capped at 24 h, the most an
	// authorization server is expected to honour.
	MaxAge time.Duration
}

// Handler serves one Client ID Metadata Document. It is immutable and safe
// for concurrent use.
type Handler struct {
	body         []byte
	etag         string
	cacheControl string
}

// NewHandler validates cfg.Document and returns a handler that serves it.
// A document that breaks the document rules is refused here, so a client can
// never publish one. Mount the handler at the path of the document's
// client_id; it answers GET and HEAD with the JSON document, an ETag, and
// Cache-Control: public, max-age=...; other methods get 405.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Document == nil {
		return nil, fmt.Errorf("%w: Document is required", ErrConfig)
	}
	if err := cfg.Document.Validate(cfg.Document.ClientID); err != nil {
		return nil, err
	}
	if cfg.MaxAge < 0 {
		return nil, fmt.Errorf("%w: negative MaxAge", ErrConfig)
	}
	maxAge := min(cmp.Or(cfg.MaxAge, DefaultHandlerMaxAge), DefaultMaxTTL)
	body, err := json.Marshal(cfg.Document)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidDocument, err)
	}
	sum := sha256.Sum256(body)
	return &Handler{
		body:         body,
		etag:         `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`,
		cacheControl: "public, max-age=" + strconv.FormatInt(int64(maxAge/time.Second), 10),
	}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", h.cacheControl)
	hdr.Set("ETag", h.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Type", "application/json")
	// ServeContent answers If-None-Match with 304 and HEAD without a body.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(h.body))
}
