package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/client"
)

func TestDescribeElicitation(t *testing.T) {
	t.Parallel()
	e := client.URLElicitation{Server: "https://mcp.example.com/mcp", Message: "Connect your github account to continue.",
		URL: "https://as.example.com:8443/connect/github?ref=abc", Host: "as.example.com:8443",
		Warnings: []string{"the host name is internationalized (Punycode): it can imitate another name"}}
	got := describeElicitation(e)
	want := `
The MCP server https://mcp.example.com/mcp asks you to open a page:
  Connect your github account to continue.

  https://as.example.com:8443/connect/github?ref=abc
          ^^^^^^^^^^^^^^^^^^^
  host: as.example.com:8443
  WARNING: the host name is internationalized (Punycode): it can imitate another name
`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestConnectPrompt(t *testing.T) {
	t.Parallel()
	e := client.URLElicitation{Server: "https://mcp.example.com/mcp", Message: "m", URL: "https://as.example.com/connect/github?ref=1", Host: "as.example.com"}
	cases := []struct {
		name   string
		mode   string
		input  string
		want   bool
		opened bool
		shows  string
	}{
		{name: "consent then done", mode: "ask", input: "y\n\n", want: true, opened: true, shows: "Open it in your browser? [y/N]"},
		{name: "consent then cancel", mode: "ask", input: "y\nn\n", want: false, opened: true},
		{name: "no consent", mode: "ask", input: "n\n", want: false, shows: "Declined."},
		{name: "empty answer is no", mode: "ask", input: "\n", want: false},
		{name: "no terminal", mode: "ask", input: "", want: false},
		{name: "print: done", mode: "print", input: "\n", want: true, shows: "Open it in your browser if you trust the host"},
		{name: "print: cancel", mode: "print", input: "n\n", want: false},
		{name: "decline", mode: "decline", input: "y\n", want: false, shows: "Declined (--connect decline)."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out syncBuffer
			p := newConnectPrompt(strings.NewReader(tc.input), &out)
			p.mode = tc.mode
			var opened []string
			p.open = func(_ context.Context, u string) error { opened = append(opened, u); return nil }
			got, err := p.ask(context.Background(), e)
			if err != nil || got != tc.want {
				t.Fatalf("ask = %v, %v; want %v", got, err, tc.want)
			}
			if tc.opened != (len(opened) == 1) || (tc.opened && opened[0] != e.URL) {
				t.Fatalf("opened %q, want opened=%v", opened, tc.opened)
			}
			s := out.String()
			if !strings.Contains(s, e.URL) || !strings.Contains(s, "host: as.example.com") || !strings.Contains(s, tc.shows) {
				t.Fatalf("shown:\n%s", s)
			}
		})
	}
	if err := (&connectPrompt{mode: "open"}).check(); err == nil {
		t.Fatal("--connect open accepted: the URL must never open without consent")
	}
}

func TestBridgeElicitationNotice(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	notice := bridgeElicitationNotice(c, "https://mcp.example.com/mcp", &out)
	notice([]byte(`{"elicitations":[{"mode":"url","elicitationId":"x","message":"Connect","url":"https://as.example.com/connect/x?ref=1"}]}`))
	notice([]byte(`{"elicitations":[{"mode":"url","message":"m","url":"file:///etc/passwd"}]}`))
	s := out.String()
	if !strings.Contains(s, "https://as.example.com/connect/x?ref=1") || !strings.Contains(s, "host: as.example.com") ||
		!strings.Contains(s, "The bridge never opens it.") || strings.Contains(s, "file:") || strings.Count(s, "asks you to open a page") != 1 {
		t.Fatalf("notice:\n%s", s)
	}
}
