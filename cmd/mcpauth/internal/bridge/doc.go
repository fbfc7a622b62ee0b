// Package bridge relays MCP messages between a host that speaks
// newline-delimited JSON-RPC over stdio and a Streamable HTTP MCP server:
// the transport of `mcpauth bridge`.
//
// Each message read from the host is POSTed to the server on its own
// (MCP "Streamable HTTP", §Sending Messages to the Server); an
// application/json answer is relayed as one message, a text/event-stream
// answer event by event as it arrives (progress notifications and
// server-to-client requests included). The bridge writes nothing but
// JSON-RPC messages to the host, one per line.
//
// It follows whichever protocol revision the host speaks:
//
//   - 2026-07-28: every request stands alone. The bridge sets
//     MCP-Protocol-Version from the message's
//     _meta["io.modelcontextprotocol/protocolVersion"], Mcp-Method from
//     its method and Mcp-Name from params.name (tools/call, prompts/get) or
//     params.uri (resources/read), in the =?base64?…?= form when the value
//     is not plain printable ASCII, and the Mcp-Param-* headers of tool
//     arguments whose input schema carries x-mcp-header (learnt from the
//     tools/list answers it relays, at most 4096 tools of 32 bindings each).
//     subscriptions/listen streams are relayed
//     for as long as the server keeps them open; results carrying
//     inputRequests and requestState pass through unchanged, except
//     URL elicitations answered through Config.Elicit (below).
//   - 2025-11-25: the bridge keeps the Mcp-Session-Id of the initialize
//     answer and sends it with the negotiated MCP-Protocol-Version on every
//     request, opens the GET stream for server-initiated messages once the
//     host has sent notifications/initialized, POSTs the host's answers to
//     server requests (elicitation, sampling, roots) back, starts a new
//     session with the host's own initialize request when the server
//     forgets the session (404), and DELETEs the session on exit.
//
// URL elicitations: with Config.Elicit set, a tools/call, prompts/get or
// resources/read of a host that did not declare URL-mode elicitation is
// sent declaring it (2026-07-28); the server's InputRequiredResult of URL
// elicitations, or its -32042 error (2025-11-25), goes to Config.Elicit
// instead of the host, the request is retried (with inputResponses and
// requestState for 2026-07-28) at most Config.MaxElicitationRounds times,
// and the host gets the retry's answer.
//
// Authorization is not done here: the bridge sends every request through
// the http.RoundTripper it is given (package client's Transport in
// `mcpauth bridge`). Redirects are never followed, so no header reaches
// another origin.
//
// Limits: a message in either direction is at most Config.MaxMessageSize
// bytes (an SSE event likewise), an error body is read up to 64 KiB, and at
// most Config.MaxInFlight requests are outstanding at once (answers to
// server requests are never held back). A server answer that breaks these
// rules, is not JSON-RPC, or ends before the answer becomes a JSON-RPC error
// for the host with one of the codes below; the bridge keeps running.
//
// Memory: a message is read whole, held once if it declares its length
// and at most twice while it arrives otherwise, and never copied after
// that (the bytes read are relayed, their line breaks turned into spaces
// in place). Large messages reuse a few buffers, so that the memory for
// messages relayed one after another does not grow with their number.
//
// A 2025-11-25 POST stream that breaks before its answer, after an event
// with an id, is resumed with GET and Last-Event-ID (at most three times,
// after the server's retry delay, capped at ten seconds).
//
// What it does not do: JSON-RPC batches (removed in 2025-06-18) and the
// HTTP+SSE transport of 2024-11-05.
package bridge
