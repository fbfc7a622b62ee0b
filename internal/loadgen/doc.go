// Package loadgen drives an MCP endpoint protected by mcpauth's resource
// middleware with a mix of valid, invalid and missing tokens at high
// concurrency for a bounded time, and reports throughput, latency
// percentiles, outcomes by kind of request, wrongly allowed and wrongly
// refused requests, and memory (Go heap and process RSS).
//
// Run is the generator: it takes any target URL and a Next function that
// says, per request, which token to send and which status to expect.
// Fixture is a ready target: an in-process go-sdk MCP server (stateless
// Streamable HTTP) behind resource.Verifier's middleware on 127.0.0.1,
// trusting an issuer whose RFC 8414 metadata and JWK Set it serves itself,
// with a token mix (Fixture.Next) covering the refusal classes of the
// resource server. For the reverse proxy, Upstream is a go-sdk MCP server
// without authorization of its own that counts requests reaching it without
// a validated identity or with a forwarded credential, and StartProtect runs
// `mcpauth protect` (BuildMcpauth builds it, with -race on request) as a
// child process in front of it, reporting its peak RSS (VmHWM), its CPU
// time and the data races its race detector printed; StartCommand runs any
// other proxy process the same way, for comparisons. cmd/mcpauth-load wraps these in a
// command; the fault tests of package attack use Run against their own
// targets.
//
// It is a measuring tool, not a test: figures go into BENCHMARKS.md with the
// command that produced them. Every listener is on 127.0.0.1. It
// deliberately does not pace requests (it is a closed-loop generator: each
// worker sends its next request when the previous one is answered) and does
// not drive remote hosts.
package loadgen
