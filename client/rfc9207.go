package client

import "net/url"

// checkIssParameter applies the RFC 9207 §2.4 table exactly as MCP
// 2026-07-28 states it (requirement CL-12), to the form-decoded response
// parameters q:
//
//	metadata advertises iss | iss in response | action
//	true                    | present          | compare
//	true                    | absent           | reject
//	false or absent         | present          | compare
//	false or absent         | absent           | proceed
//
// The comparison is simple string equality with the issuer recorded before
// the redirect: no case folding, default-port removal, trailing-slash or
// percent-encoding normalization. A repeated iss is a mismatch. The
// caller must not use the response's code or error text unless this
// returns nil (a mix-up attacker controls them).
func checkIssParameter(advertised bool, expected string, q url.Values) error {
	vals, present := q["iss"]
	switch {
	case !present && advertised:
		return ErrIssuerMissing
	case !present:
		return nil
	case len(vals) != 1 || vals[0] != expected:
		return ErrIssuerParameterMismatch
	default:
		return nil
	}
}
