package authservertest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// A Fault is a deliberate protocol violation of the authorization server,
// so that a client can be tested against each mix-up case (RFC 9207,
// RFC 8414 §3.3, MCP "Authorization Server Discovery"). Faults change what
// the server sends, never what it checks: PKCE stays required, codes stay
// single-use. Its value is the name the command line accepts
// (`mcpauth authserver --insecure-fault NAME`).
type Fault string

// The faults.
const (
	// OmitIss leaves iss out of authorization responses while the metadata
	// still advertises authorization_response_iss_parameter_supported.
	OmitIss Fault = "omit-iss"
	// WrongIss sends [WrongIssuer] as iss.
	WrongIss Fault = "wrong-iss"
	// TrailingSlashIss sends the issuer with a "/" appended as iss.
	TrailingSlashIss Fault = "trailing-slash-iss"
	// MetadataIssuerMismatch publishes metadata whose issuer is the real
	// issuer with "/other" appended.
	MetadataIssuerMismatch Fault = "metadata-issuer-mismatch"
	// OmitPKCEMethods leaves code_challenge_methods_supported out of the
	// metadata.
	OmitPKCEMethods Fault = "omit-pkce-methods"
	// OmitIssSupported leaves authorization_response_iss_parameter_supported
	// out of the metadata (iss is still sent unless OmitIss).
	OmitIssSupported Fault = "omit-iss-supported"
)

// WrongIssuer is the iss value sent with [WrongIss]. The .invalid
// top-level domain never resolves (RFC 6761 §6.4).
const WrongIssuer = "https://wrong-issuer.invalid"

// Faults returns every fault, in the order of the constants, for
// command-line help.
func Faults() []Fault {
	return []Fault{OmitIss, WrongIss, TrailingSlashIss, MetadataIssuerMismatch, OmitPKCEMethods, OmitIssSupported}
}

// ParseFault returns the fault called name (surrounding spaces ignored), or
// an error naming the known ones.
func ParseFault(name string) (Fault, error) {
	f := Fault(strings.TrimSpace(name))
	if !slices.Contains(Faults(), f) {
		known := make([]string, 0, len(Faults()))
		for _, k := range Faults() {
			known = append(known, string(k))
		}
		return "", fmt.Errorf("authservertest: unknown fault %q (known: %s)", name, strings.Join(known, ", "))
	}
	return f, nil
}

// InjectFaults returns next answering with faults: the iss of its
// authorization responses and the fields of its metadata documents are
// rewritten as each fault says (see [RewriteAuthorizationResponse] and
// [RewriteMetadata]). With no faults it returns next. It panics on a Fault
// that is not one of the constants, as a fault silently not injected would
// let a test pass that should fail.
func InjectFaults(next http.Handler, faults ...Fault) http.Handler {
	on := map[Fault]bool{}
	for _, f := range faults {
		if _, err := ParseFault(string(f)); err != nil {
			panic(err)
		}
		on[f] = true
	}
	h := next
	if on[MetadataIssuerMismatch] || on[OmitPKCEMethods] || on[OmitIssSupported] {
		h = RewriteMetadata(h, func(m map[string]any) {
			if iss, ok := m["issuer"].(string); ok && on[MetadataIssuerMismatch] {
				m["issuer"] = iss + "/other"
			}
			if on[OmitPKCEMethods] {
				delete(m, "code_challenge_methods_supported")
			}
			if on[OmitIssSupported] {
				delete(m, "authorization_response_iss_parameter_supported")
			}
		})
	}
	if on[OmitIss] || on[WrongIss] || on[TrailingSlashIss] {
		h = RewriteAuthorizationResponse(h, func(q url.Values) {
			switch {
			case on[OmitIss]:
				q.Del("iss")
			case on[WrongIss]:
				q.Set("iss", WrongIssuer)
			default: // TrailingSlashIss
				q.Set("iss", q.Get("iss")+"/")
			}
		})
	}
	return h
}
