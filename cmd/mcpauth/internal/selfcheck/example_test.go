package selfcheck_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
)

// An MCP endpoint that answers every request without asking for a token
// fails the authorization checks that matter.
func ExampleRun() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
	}))
	defer srv.Close()

	rep, err := selfcheck.Run(context.Background(), selfcheck.Config{
		URL:                       srv.URL + "/mcp",
		InsecureAllowHTTPLoopback: true, // the test server is plain http on 127.0.0.1
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, res := range rep.Results {
		if res.Status == selfcheck.StatusFail {
			fmt.Println(res.ID, res.Name)
		}
	}
	fmt.Println("failed:", rep.Failed())
	// Output:
	// RS-02 metadata at the path-inserted URL
	// RS-04 401 without a token, with resource_metadata
	// RS-07 invalid token gets 401 invalid_token
	// RS-16 malformed Authorization gets 400 invalid_request
	// RS-17 token in the query string refused
	// TR-01 disallowed Origin gets 403
	// failed: true
}

func ExampleReport_WriteTable() {
	rep := &selfcheck.Report{
		URL:  "https://mcp.example.com/mcp",
		Time: time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC),
		Results: []selfcheck.Result{
			{ID: "RS-02", Name: "metadata at the path-inserted URL", Status: selfcheck.StatusPass},
			{ID: "RS-06", Name: "no error= without credentials", Status: selfcheck.StatusWarn, Detail: `error="invalid_token" on a request that carried no token`},
			{ID: "RS-19", Name: "inbound token not passed to upstream APIs", Status: selfcheck.StatusSkip, Detail: "cannot be observed from outside"},
		},
	}
	_ = rep.WriteTable(os.Stdout)
	// Output:
	// STATUS  ID     CHECK                                      DETAIL
	// PASS    RS-02  metadata at the path-inserted URL
	// WARN    RS-06  no error= without credentials              error="invalid_token" on a request that carried no token
	// SKIP    RS-19  inbound token not passed to upstream APIs  cannot be observed from outside
	// https://mcp.example.com/mcp: 1 pass, 1 warn, 0 fail, 1 skip
}
