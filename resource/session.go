package resource

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"net/http"
	"sync"
)

// Session binding (MCP Security Best Practices, "Session Hijacking"):
// servers must bind session IDs to user-specific information. The ID a
// client sees is the wrapped handler's ID, a ".", and a MAC over the
// resource, the user (issuer and subject) and that ID under the session
// key. The middleware checks and strips the MAC of every inbound
// Mcp-Session-Id and adds it to every outbound one, so it keeps no table:
// replicas (or several `mcpauth protect` processes) sharing a key accept
// each other's sessions.

const (
	sessionHeader = "Mcp-Session-Id"
	// MinSessionKeyBytes is the shortest [Config.SessionKey] accepted.
	MinSessionKeyBytes = 32
	sessionMACBytes    = 16 // HMAC-SHA256 truncated to 128 bits
	sessionMACChars    = 22 // its unpadded base64url length
	sessionDomain      = "mcpauth session v1"
)

// sessionBinder signs and checks session IDs.
type sessionBinder struct {
	resource string
	pool     sync.Pool // *sessionMAC
}

// sessionMAC is a keyed HMAC with its scratch space, reused through the
// pool so that checking a session ID allocates nothing.
type sessionMAC struct {
	h   hash.Hash
	in  []byte
	sum [sha256.Size]byte
}

// newSessionBinder makes a binder for key, or for a random key of its own
// when key is nil (crypto/rand: no I/O beyond the kernel's generator).
func newSessionBinder(key []byte, resource string) (*sessionBinder, error) {
	if key == nil {
		key = make([]byte, MinSessionKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("%w: session key: %w", ErrInvalidConfig, err)
		}
	} else if len(key) < MinSessionKeyBytes {
		return nil, fmt.Errorf("%w: session key must have at least %d bytes", ErrInvalidConfig, MinSessionKeyBytes)
	}
	key = append([]byte(nil), key...)
	b := &sessionBinder{resource: resource}
	b.pool.New = func() any { return &sessionMAC{h: hmac.New(sha256.New, key)} }
	return b, nil
}

// mac writes the MAC of (resource, issuer, owner, id) into dst, which has
// sessionMACChars bytes. Every field is length-prefixed, so no two tuples
// share an input.
func (b *sessionBinder) mac(dst []byte, av *authValue, id string) {
	m := b.pool.Get().(*sessionMAC)
	in := append(m.in[:0], sessionDomain...)
	kind, owner := sessionOwner(av)
	for _, s := range [...]string{b.resource, av.info.Issuer, kind, owner, id} {
		in = binary.BigEndian.AppendUint32(in, uint32(len(s)))
		in = append(in, s...)
	}
	m.h.Reset()
	m.h.Write(in)
	sum := m.h.Sum(m.sum[:0])
	base64.RawURLEncoding.Encode(dst, sum[:sessionMACBytes])
	m.in = in
	b.pool.Put(m)
}

// sessionOwner is who a session belongs to, and which kind of name that
// is, so that a name of one kind is never confused with the same value of
// another: the subject; for a token without one, the client it was issued
// to; for a token with neither (RFC 7662 makes both optional), the token
// itself, so that such tokens never share sessions (the session then ends
// with the token). The token is only ever an input of the keyed MAC.
func sessionOwner(av *authValue) (kind, owner string) {
	switch info := av.info; {
	case info.Subject != "":
		return "sub", info.Subject
	case info.ClientID != "":
		return "client_id", info.ClientID
	}
	return "token", av.token
}

// principal is who a session belongs to: the subject, or for a token
// without one, the client it was issued to (RFC 9068 §2.2 makes them the
// same for client-credentials tokens).
func principal(info *TokenInfo) string {
	if info.Subject != "" {
		return info.Subject
	}
	return info.ClientID
}

// sign returns the ID the client sees for the handler's session id.
func (b *sessionBinder) sign(av *authValue, id string) string {
	out := make([]byte, len(id)+1+sessionMACChars)
	copy(out, id)
	out[len(id)] = '.'
	b.mac(out[len(id)+1:], av, id)
	return string(out)
}

// open checks a session ID a client sent and returns the handler's id.
func (b *sessionBinder) open(av *authValue, signed string) (string, bool) {
	n := len(signed) - sessionMACChars - 1
	if n < 1 || signed[n] != '.' {
		return "", false
	}
	var want [sessionMACChars]byte
	id := signed[:n]
	b.mac(want[:], av, id)
	return id, hmac.Equal(want[:], []byte(signed[n+1:]))
}

// check checks the request's Mcp-Session-Id, if any, against the
// verified identity and returns the handler's session id ("" when the
// request has none, or an empty one, which names no session).
func (b *sessionBinder) check(r *http.Request, av *authValue) (string, error) {
	vals, ok := r.Header[sessionHeader]
	switch {
	case !ok:
		return "", nil
	case len(vals) != 1:
		return "", errSessionMultiple
	case vals[0] == "":
		return "", nil
	}
	id, ok := b.open(av, vals[0])
	if !ok {
		return "", errSessionNotBound
	}
	return id, nil
}

// sessionWriter is the wrapped handler's ResponseWriter: before the
// header goes out, it replaces every Mcp-Session-Id the handler set with
// the ID bound to the request's user.
type sessionWriter struct {
	http.ResponseWriter
	ra     *requestAuth
	done   bool     // the final header has been sent
	signed []string // the Mcp-Session-Id values bind set last
}

// bind signs the handler's Mcp-Session-Id values, unless they are those it
// signed already.
func (w *sessionWriter) bind() {
	h := w.ResponseWriter.Header()
	vals := h[sessionHeader]
	if len(vals) == 0 || (len(w.signed) > 0 && &vals[0] == &w.signed[0]) {
		return
	}
	out := make([]string, len(vals))
	for i, id := range vals {
		if id != "" {
			id = w.ra.v.sessions.sign(w.ra.av, id)
		}
		out[i] = id
	}
	h[sessionHeader] = out
	w.signed = out
}

func (w *sessionWriter) WriteHeader(code int) {
	if !w.done {
		w.bind() // 1xx headers too: no unsigned ID ever leaves
		w.done = code >= 200 || code == http.StatusSwitchingProtocols
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	w.finish()
	return w.ResponseWriter.Write(p)
}

// Flush sends the header (bound) and any buffered data; it does nothing
// when the underlying writer cannot flush.
func (w *sessionWriter) Flush() {
	w.finish()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// finish binds the session IDs before the final header goes out: on the
// first Write or Flush, or when the handler returned without writing.
func (w *sessionWriter) finish() {
	if !w.done {
		w.bind()
		w.done = true
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
