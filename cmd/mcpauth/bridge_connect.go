package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mcpauth/mcpauth/client"
)

// bridgeElicitationNotice is the bridge's OnURLElicitationRequired: a
// stdio host may not show a 2025-11-25 server's URL elicitation (error
// -32042), so the bridge tells the user on stderr, with the host marked
// and the warnings, and leaves opening the page to them; it never opens or
// fetches it (stdin belongs to the host, so there is no one to consent).
func bridgeElicitationNotice(c *client.Client, serverURL string, stderr io.Writer) func(json.RawMessage) {
	var mu sync.Mutex
	return func(data json.RawMessage) {
		els := c.URLElicitations(context.Background(), serverURL, data)
		if len(els) == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range els {
			fmt.Fprint(stderr, describeElicitation(e))
		}
		fmt.Fprintln(stderr, "The MCP host got this request as error -32042; if it does not show it, open the URL in your browser")
		fmt.Fprintln(stderr, "yourself if you trust the host, finish there, and call the tool again. The bridge never opens it.")
	}
}
