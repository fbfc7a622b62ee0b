package authservertest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// Start an authorization server whose issuer has a path and read its
// metadata. In a test, NewServer(t, cfg) does the same and closes it at
// the end of the test.
func ExampleStart() {
	ts, err := authservertest.Start(authserver.Config{Issuer: "/tenant1", Consent: authserver.ConsentAuto})
	if err != nil {
		panic(err)
	}
	defer ts.Close()

	urls, _ := oauthmeta.AuthServerMetadataURLs(ts.Issuer())
	resp, err := ts.Client().Get(urls[0])
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var m oauthmeta.AuthServerMetadata
	_ = json.NewDecoder(resp.Body).Decode(&m)
	fmt.Println(resp.StatusCode, m.Issuer == ts.Issuer(), ts.Issuer() == ts.URL+"/tenant1")
	// Output: 200 true true
}

// Make the server send a wrong iss, so that a client's mix-up defence
// can be tested.
func ExampleInjectFaults() {
	ts, err := authservertest.Start(authserver.Config{
		Consent: authserver.ConsentAuto,
		Clients: []authserver.Client{{ID: "app", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
	}, authservertest.WrongIss)
	if err != nil {
		panic(err)
	}
	defer ts.Close()

	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"http://127.0.0.1/callback"},
		"code_challenge": {pkce.Challenge(pkce.GenerateVerifier())}, "code_challenge_method": {"S256"}}
	hc := ts.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Get(ts.Issuer() + "/authorize?" + q.Encode())
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	fmt.Println(loc.Query().Get("iss"))
	// Output: https://wrong-issuer.invalid
}

// The fault names the command line accepts.
func ExampleFaults() {
	fmt.Println(authservertest.Faults())
	f, err := authservertest.ParseFault("omit-pkce-methods")
	fmt.Println(f == authservertest.OmitPKCEMethods, err)
	// Output:
	// [omit-iss wrong-iss trailing-slash-iss metadata-issuer-mismatch omit-pkce-methods omit-iss-supported]
	// true <nil>
}

// Serve an authorization server's metadata with a member changed, for a
// hostile server of one's own.
func ExampleRewriteMetadata() {
	as, err := authserver.New(authserver.Config{Issuer: "https://as.example.com"})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	h := authservertest.RewriteMetadata(as, func(m map[string]any) {
		m["code_challenge_methods_supported"] = []string{"plain"}
	})

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://as.example.com/.well-known/oauth-authorization-server", nil))
	var m oauthmeta.AuthServerMetadata
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	fmt.Println(m.CodeChallengeMethodsSupported, m.SupportsS256(), m.Issuer)
	// Output: [plain] false https://as.example.com
}
