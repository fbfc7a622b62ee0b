package authserver

import (
	"fmt"
	"strings"
)

// WrongIssuer is the iss value sent with [Faults.WrongIss]. The .invalid
// top-level domain never resolves (RFC 6761 §6.4).
const WrongIssuer = "https://wrong-issuer.invalid"

// Faults switch on deliberate protocol violations so that a client library
// can be tested against each authorization server mix-up case (RFC 9207,
// RFC 8414 §3.3, MCP "Authorization Server Discovery"). The zero value is
// correct behaviour. They never weaken what the server itself checks.
type Faults struct {
	// OmitIss leaves iss out of authorization responses while metadata
	// still advertises authorization_response_iss_parameter_supported.
	OmitIss bool
	// WrongIss sends [WrongIssuer] as iss.
	WrongIss bool
	// TrailingSlashIss sends the issuer with a "/" appended as iss.
	TrailingSlashIss bool
	// MetadataIssuerMismatch publishes metadata whose issuer is the real
	// issuer with "/other" appended.
	MetadataIssuerMismatch bool
	// OmitPKCEMethods leaves code_challenge_methods_supported out of the
	// metadata (the server still requires PKCE).
	OmitPKCEMethods bool
	// OmitIssSupported leaves authorization_response_iss_parameter_supported
	// out of the metadata (iss is still sent unless OmitIss).
	OmitIssSupported bool
}

// FaultNames returns the names [Faults.Set] accepts, for command-line help.
func FaultNames() []string {
	return []string{
		"omit-iss", "wrong-iss", "trailing-slash-iss", "metadata-issuer-mismatch",
		"omit-pkce-methods", "omit-iss-supported",
	}
}

// Set switches on the fault called name (one of [FaultNames]).
func (f *Faults) Set(name string) error {
	switch strings.TrimSpace(name) {
	case "omit-iss":
		f.OmitIss = true
	case "wrong-iss":
		f.WrongIss = true
	case "trailing-slash-iss":
		f.TrailingSlashIss = true
	case "metadata-issuer-mismatch":
		f.MetadataIssuerMismatch = true
	case "omit-pkce-methods":
		f.OmitPKCEMethods = true
	case "omit-iss-supported":
		f.OmitIssSupported = true
	default:
		return configErr("fault", fmt.Sprintf("unknown fault (known: %s)", strings.Join(FaultNames(), ", ")))
	}
	return nil
}

// issParam returns the iss value for authorization responses and whether
// to send it at all.
func (s *Server) issParam() (string, bool) {
	f := s.cfg.InsecureFaults
	switch {
	case f.OmitIss:
		return "", false
	case f.WrongIss:
		return WrongIssuer, true
	case f.TrailingSlashIss:
		return s.cfg.Issuer + "/", true
	default:
		return s.cfg.Issuer, true
	}
}
