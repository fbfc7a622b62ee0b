package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
)

const connectDescription = `
A tool may need the user to open a page first, for example to connect a GitHub account at the
authorization server (a URL-mode elicitation). The full URL is printed on stderr with its host
marked and warnings (an internationalized or Punycode host, a host other than the server's
authorization server); it is never fetched. With --connect ask (the default) it is opened in the
system browser only after you answer y, and the call is retried once you press Enter; with
--connect print you open it yourself; --connect decline refuses every such request.`

// connectPrompt is the terminal side of URL elicitations: it shows the
// URL, gets consent on in, opens it with open, and waits for the user.
type connectPrompt struct {
	mode string
	in   *bufio.Reader
	out  io.Writer
	open func(ctx context.Context, url string) error
}

func newConnectPrompt(in io.Reader, out io.Writer) *connectPrompt {
	return &connectPrompt{in: bufio.NewReader(in), out: out, open: client.OpenBrowser}
}

func (p *connectPrompt) register(fs *flag.FlagSet) {
	fs.StringVar(&p.mode, "connect", "ask", "when a tool asks you to open a page (connect an account): ask (show it, open it after you answer y), print (show it; you open it), decline")
}

func (p *connectPrompt) check() error {
	switch p.mode {
	case "ask", "print", "decline":
		return nil
	}
	return fmt.Errorf("%w: --connect: %q is not ask, print or decline", errUsage, p.mode)
}

// sdkOptions adds the URL elicitation handling of the client c for
// serverURL to opts, and returns the sending middleware for 2025-11-25
// servers.
func (p *connectPrompt) sdkOptions(c *client.Client, serverURL string, opts *mcp.ClientOptions) (mcp.Middleware, error) {
	h, err := c.ElicitationHandler(serverURL)
	if err != nil {
		return nil, err
	}
	opts.ElicitationHandler = h
	opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	return c.ElicitationMiddleware(serverURL)
}

// ask is the client's OnURLElicitation.
func (p *connectPrompt) ask(ctx context.Context, e client.URLElicitation) (bool, error) {
	fmt.Fprint(p.out, describeElicitation(e))
	switch p.mode {
	case "decline":
		fmt.Fprintln(p.out, "Declined (--connect decline).")
		return false, nil
	case "print":
		fmt.Fprint(p.out, "Open it in your browser if you trust the host, then press Enter (n to cancel): ")
		return p.yes(true), nil
	}
	fmt.Fprint(p.out, "Open it in your browser? [y/N] ")
	if !p.yes(false) {
		fmt.Fprintln(p.out, "Declined.")
		return false, nil
	}
	if err := p.open(ctx, e.URL); err != nil {
		fmt.Fprintf(p.out, "(could not start a browser: %v; open the URL yourself)\n", err)
	}
	fmt.Fprint(p.out, "Press Enter when you have finished in the browser (n to cancel): ")
	return p.yes(true), nil
}

// yes reads one answer: an empty line is def, y/yes true, anything else
// (and end of input) false.
func (p *connectPrompt) yes(def bool) bool {
	line, err := p.in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(p.out)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "":
		return def
	case "y", "yes":
		return true
	}
	return false
}

// describeElicitation is what the user sees: the server, its message, the
// full URL with its host marked underneath, and the warnings. The client
// library has refused URLs with control characters or spaces and made the
// message printable.
func describeElicitation(e client.URLElicitation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe MCP server %s asks you to open a page:\n  %s\n\n  %s\n", e.Server, e.Message, e.URL)
	if i := strings.Index(e.URL, "://"); i >= 0 && e.Host != "" && strings.HasPrefix(e.URL[i+3:], e.Host) {
		pad := utf8.RuneCountInString(e.URL[:i+3])
		fmt.Fprintf(&b, "  %s%s\n", strings.Repeat(" ", pad), strings.Repeat("^", utf8.RuneCountInString(e.Host)))
	}
	fmt.Fprintf(&b, "  host: %s\n", e.Host)
	for _, w := range e.Warnings {
		fmt.Fprintf(&b, "  WARNING: %s\n", w)
	}
	return b.String()
}
