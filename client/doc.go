// Package client is the OAuth 2.1 client of an MCP host (an IDE, an agent,
// a CLI): given the URL of a protected MCP server, it finds the server's
// authorization server from a 401 or 403, registers, authorizes with PKCE,
// checks the response against mix-up attacks, and keeps, refreshes and
// steps up one token per authorization server, resource and client. It
// implements the client side of the MCP authorization specification
// 2026-07-28; [Client] lists what happens on a 401.
//
// Use it through one of two doors:
//
//   - [Client.OAuthHandler] implements the official Go SDK's
//     auth.OAuthHandler, for mcp.StreamableClientTransport;
//   - [Client.Transport] is an http.RoundTripper for any HTTP client.
//
// x/oauth2 code can take [Client.TokenSource], without 401/403 handling;
// [Client.Login] and [Client.Logout] serve a CLI's login commands.
//
// A minimal CLI host:
//
//	c, err := client.New(client.Config{
//		Authorizer:          &client.Loopback{},   // browser + 127.0.0.1 listener
//		ClientIDMetadataURL: "https://app.example.com/oauth/client.json",
//		Store:               fileStore,             // tokenstore.NewFile(...)
//	})
//	h, err := c.OAuthHandler("https://mcp.example.com/mcp")
//	session, err := mcp.NewClient(impl, nil).Connect(ctx,
//		&mcp.StreamableClientTransport{Endpoint: "https://mcp.example.com/mcp", OAuthHandler: h}, nil)
//
// An [Authorizer] gets the user through the authorization ([Loopback],
// [Paste], [FollowRedirects]); a [Grant] stands in for the user in machine
// clients; [DPoPConfig] asks for sender-constrained tokens. Tokens,
// registrations and discovery results live in a tokenstore.Store.
//
// A host branches on five error classes with errors.Is: [ErrConfig],
// [ErrDiscovery], [ErrAuthorization], [ErrTokenRequest] and [ErrForbidden];
// an [*Error] names the specific reason.
package client
