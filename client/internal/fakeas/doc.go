// Package fakeas is a small, strict, auto-approving OAuth 2.1 authorization
// server and a protected MCP server for the tests and examples of package
// client. Both listen on 127.0.0.1 only and record every request, so tests
// can assert what the client sent and how often. It implements just enough
// of RFC 6749/OAuth 2.1, RFC 7636, RFC 8414, RFC 7591, RFC 9207 and
// RFC 8707 to be conformant, plus switches for each misbehaviour the
// client must survive.
package fakeas
