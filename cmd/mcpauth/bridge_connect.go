package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/mcpauth/mcpauth/client"
)

// bridgeElicitationNotice is the bridge's OnURLElicitationRequired when
// nobody can be asked (no controlling terminal, or --connect print): a
// stdio host may not show a 2025-11-25 server's URL elicitation (error
// -32042), so the bridge tells the user on stderr, with the host marked
// and the warnings, and leaves opening the page to them; it never opens or
// fetches it.
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

// bridgeAsker is the bridge's Elicit: for a host without URL elicitation
// it asks the user on the controlling terminal (stdin and stdout belong
// to the host) with the prompt of `mcpauth call`, one elicitation at a
// time, and opens the page only after consent, through the safe opener.
type bridgeAsker struct {
	c         *client.Client
	serverURL string
	prompt    *connectPrompt
	turn      chan struct{} // one prompt on the terminal at a time
}

func newBridgeAsker(c *client.Client, serverURL string, prompt *connectPrompt) *bridgeAsker {
	open := prompt.open
	prompt.open = func(ctx context.Context, u string) error {
		if err := ctx.Err(); err != nil { // the host gave up while the user answered
			return err
		}
		return open(ctx, u)
	}
	return &bridgeAsker{c: c, serverURL: serverURL, prompt: prompt, turn: make(chan struct{}, 1)}
}

// elicit reports whether the user accepted and finished every
// elicitation of data. It returns when ctx ends; a prompt then waiting on
// the terminal ends with the user's next line, and opens nothing.
func (a *bridgeAsker) elicit(ctx context.Context, data json.RawMessage) (bool, error) {
	els := a.c.URLElicitations(ctx, a.serverURL, data)
	select {
	case a.turn <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	type answer struct {
		ok  bool
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() { <-a.turn }()
		if len(els) == 0 || len(els) != countElicitations(data) {
			fmt.Fprintln(a.prompt.out, "\nThe MCP server asked to open a page the bridge refuses to show (see the log); declined.")
			done <- answer{}
			return
		}
		for _, e := range els {
			ok, err := a.prompt.ask(ctx, e)
			if err != nil || !ok || ctx.Err() != nil {
				done <- answer{ok && ctx.Err() == nil, err}
				return
			}
		}
		fmt.Fprintln(a.prompt.out, "Retrying the request.")
		done <- answer{ok: true}
	}()
	select {
	case r := <-done:
		return r.ok, r.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// countElicitations is the number of elicitations in the data of a
// -32042 error, checked or not.
func countElicitations(data json.RawMessage) int {
	var d struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	_ = json.Unmarshal(data, &d)
	return len(d.Elicitations)
}

// bridgeConnectDescription is the bridge's part of the help.
var bridgeConnectDescription = strings.Replace(connectDescription, "printed on stderr",
	"shown on the controlling terminal (stderr without one)", 1) + `
A host that declared URL-mode elicitation gets these requests itself. For one that did not, the
bridge asks on the controlling terminal (never stdin/stdout, which carry the host's protocol):
after y and Enter it retries the request (2026-07-28: with the server's requestState) and the host
gets the retry's answer. Without a terminal (and on Windows), or with --connect print, the URL is
printed on stderr and the host gets the server's answer unchanged.`
