// Package attack is mcpauth's end-to-end attack suite: every hostile party
// the MCP authorization specification (2026-07-28, "Security
// Considerations" and the Security Best Practices page) and RFC 8725, RFC 9207
// and RFC 9700 name is played for real against mcpauth's client, resource
// server middleware and authorization server, each refusal is asserted, and
// so is the absence of leaks: no token, code, verifier or secret appears in a
// log record, an error text or a response body.
//
// The package has no exported API; it consists of tests only (go test
// ./attack, `make attack`). Every party listens on 127.0.0.1. The parties
// have public-looking names (as.example.com, evil.example.com, …): an
// injected resolver answers them with public addresses that are never
// contacted, and an injected dial function connects those addresses to the
// loopback listeners, so the production code paths (https only, public
// addresses only) run unchanged. Names that resolve to private, link-local
// or loopback addresses have no listener: a dial to one of them fails the
// test, proving the refusal happened before any packet was sent. Nothing in
// this package sends a packet outside 127.0.0.0/8.
//
// The DPoP attacks (rs_dpop_test.go) run against two targets from one
// table: the resource middleware in process, and a real `mcpauth protect
// --dpop required` process built from this module, on 127.0.0.1 with a
// local plain-http issuer (the child cannot use the injected resolver).
//
// Besides the attacks, the package holds the fault tests (JWKS endpoint down,
// slow or returning garbage under load; key rotation under load; a corrupted
// or locked token store; an authorization server restarted on its data
// directory), fuzz targets for parsers no other package fuzzes,
// TestFuzzCoverage, which fails when an exported parser or verifier has no
// fuzz target, and TestSecurityDocument, which keeps SECURITY.md honest:
// every test it cites must exist in the file it names, and every exported
// Insecure… switch in the module must be listed. TestRequirementIDs fails
// when a requirement ID cited anywhere in the module has no row, or two, in
// docs/requirements.md.
//
// It deliberately does not measure speed (see internal/loadgen) and does not
// repeat the unit tests of the packages, which SECURITY.md cites where they
// are the proof.
package attack
