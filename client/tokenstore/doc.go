// Package tokenstore keeps what an MCP host's OAuth client must remember
// between requests and between runs: access and refresh tokens, client
// registrations and discovery results. Package client reads and writes it
// through the [Store] interface; this package provides an in-memory store
// ([Memory]), a file store ([File]) that two processes on one machine can
// share, and a store in the operating system's keychain ([Keychain]) with
// the same guarantees.
//
// The data model follows the MCP authorization specification (2026-07-28):
//
//   - A [Token] is golang.org/x/oauth2's Token, embedded, plus the granted
//     and requested scopes, the DPoP key thumbprint and, for a key the
//     client generated, that private key (a JWK, a credential like the
//     refresh token). It belongs to exactly one (issuer, resource,
//     client_id) triple, its [Key] ("Token Requirements": one token per
//     authorization server and resource). A token for one MCP server is
//     never looked up for another.
//   - A [Registration] belongs to exactly one issuer ("Authorization Server
//     Binding", SEP-2352): credentials a
//     server issued are never shown to another server.
//   - A [Discovery] records, per MCP server URL, which authorization server
//     was chosen and its validated metadata, with an expiry, so that a second
//     connection costs no discovery requests.
//
// Refresh tokens are credentials (OAuth 2.1 §4.3): the
// file store writes with mode 0600 in a 0700 directory (on Windows, with an
// access control list that grants the current user alone), replaces the
// file atomically (temporary file, fsync, rename), refuses to read a file
// that other users can read, and serializes writers across processes with
// a lock file (github.com/gofrs/flock: flock(2) on Unix, LockFileEx on
// Windows). [Token] and [Registration] redact their
// secrets when formatted with fmt or logged with log/slog.
//
// The file store does not encrypt at rest (use [Keychain], or an encrypted
// home directory). No store expires entries by itself or decides
// anything: validation lives in package client.
package tokenstore
