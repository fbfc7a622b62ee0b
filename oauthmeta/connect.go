package oauthmeta

// ConnectURI is the member of a token exchange refusal that tells a
// resource server where the user connects their account at a third-party
// provider: an invalid_grant error response (RFC 6749 §5.2) to a token
// exchange whose audience is a provider the user has not connected carries
// it beside "error" and "error_description":
//
//	HTTP/1.1 400 Bad Request
//	Content-Type: application/json
//
//	{"error":"invalid_grant",
//	 "error_description":"the user has not connected github",
//	 "connect_uri":"https://as.example.com/connect/github?ref=..."}
//
// The URI is at the authorization server's origin and holds only an
// opaque, single-use reference: no user data, nothing pre-authenticated.
// The resource server hands it to the user in a URL-mode elicitation.
const ConnectURI = "connect_uri"
