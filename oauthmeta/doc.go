// Package oauthmeta holds the OAuth wire types and rules that every side of
// mcpauth shares: the resource server (package resource), the host client
// (package client) and the demo authorization server (package authserver).
// Nothing here performs I/O; fetching lives in the callers, through one
// SSRF-safe fetcher.
//
// It implements:
//
//   - RFC 9728 OAuth 2.0 Protected Resource Metadata: the document
//     ([ProtectedResourceMetadata]), its path-inserted well-known URL
//     ([ProtectedResourceMetadataURL], §3.1) and the §3.3 rule that the
//     document's resource is identical to the one asked for.
//   - RFC 8414 OAuth 2.0 Authorization Server Metadata and OpenID Connect
//     Discovery 1.0 ([AuthServerMetadata]), the ordered probe list the MCP
//     specification (2026-07-28, "Authorization Server Discovery") requires
//     ([AuthServerMetadataURLs]), and the §3.3 identical-issuer rule.
//   - RFC 8707 resource indicators and the MCP "Canonical Server URI"
//     ([CanonicalResource], [SameResource]).
//   - RFC 9110 §11.6.1 WWW-Authenticate parsing and formatting, with the
//     RFC 6750 §3 and RFC 9728 §5.1 parameters ([ParseChallenges],
//     [Challenge.String]).
//   - The RFC 6749 §5.2 error body ([Error]) and the registered error codes,
//     the RFC 6749 §5.1 token response ([TokenResponse]), RFC 7591 client
//     metadata ([ClientMetadata]) and the RFC 7662 introspection response
//     ([IntrospectionResponse]).
//   - URL safety for endpoints named in fetched documents ([URLPolicy]): https
//     only (plain http only to loopback, and only when asked), and never
//     javascript:, data:, file: or vbscript: (MCP Security Best Practices,
//     "OAuth Authorization URL Validation").
//
// Parsing is strict: documents must be one JSON object, names match
// case-sensitively and duplicate names are errors ([DecodeJSON], which
// types built on these can use too).
// Errors name the failed rule and the field, never a token or secret.
//
// It deliberately does not: fetch anything, choose between authorization
// servers, verify signatures, or implement OAuth flows. The Client ID Metadata
// Document type lives in package clientmeta, which builds on [ClientMetadata].
package oauthmeta
