package authserver_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
)

// Behind a load balancer at 127.0.0.1 (here the example itself, sending
// X-Forwarded-For as the balancer would), each client the balancer
// forwards for has buckets of its own: two requests each, then 429.
func ExampleTrustedProxies() {
	ts, err := authservertest.Start(authserver.Config{
		RateLimit: authserver.RateLimit{PerIP: 0.001, Burst: 2}, // no refill within the example
		TrustedProxies: authserver.TrustedProxies{
			Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
			Header:   authserver.ProxyHeaderXForwardedFor,
		},
	})
	if err != nil {
		panic(err)
	}
	defer ts.Close()
	token := ts.Issuer() + "/token"
	for _, client := range []string{"198.51.100.1", "198.51.100.2", "2001:db8:1::1"} {
		fmt.Print(client, ":")
		for range 3 {
			req, _ := http.NewRequest(http.MethodPost, token, strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-For", "203.0.113.66, "+client) // what the client claimed, then what the balancer saw
			resp, err := ts.Client().Do(req)
			if err != nil {
				panic(err)
			}
			resp.Body.Close()
			fmt.Print(" ", resp.StatusCode)
		}
		fmt.Println()
	}
	// Output:
	// 198.51.100.1: 401 401 429
	// 198.51.100.2: 401 401 429
	// 2001:db8:1::1: 401 401 429
}
