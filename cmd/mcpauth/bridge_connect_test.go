package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/mcpauth/mcpauth/client"
)

// fakeTerminal is a controlling terminal: the user's lines in, what the
// bridge shows out.
type fakeTerminal struct {
	io.Reader
	out syncBuffer
}

func (t *fakeTerminal) Write(p []byte) (int, error) { return t.out.Write(p) }

// TestBridgeAsker: the bridge asks on the terminal with the display of
// `mcpauth call`, opens the page only after consent and only a URL the
// browser rules allow, and a cancelled request opens nothing.
func TestBridgeAsker(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}})
	if err != nil {
		t.Fatal(err)
	}
	const good = `{"elicitations":[{"mode":"url","elicitationId":"connect-github","message":"Connect GitHub","url":"https://xn--gthub-n4a.example/connect/github?ref=1"}]}`
	const mixed = `{"elicitations":[{"mode":"url","elicitationId":"a","message":"m","url":"https://as.example.com/connect/a"},{"mode":"url","elicitationId":"b","message":"m","url":"file:///etc/passwd"}]}`
	for _, tc := range []struct {
		name, input, data, mode string
		want                    bool
		opened                  int
		shows                   []string
	}{
		{name: "accepted", input: "y\n\n", data: good, mode: "ask", want: true, opened: 1,
			shows: []string{"https://xn--gthub-n4a.example/connect/github?ref=1", "^^^^", "WARNING: the host name is internationalized (Punycode)", "Press Enter when you have finished", "Retrying"}},
		{name: "refused consent", input: "n\n", data: good, mode: "ask", shows: []string{"Declined."}},
		{name: "cancelled after opening", input: "y\nn\n", data: good, mode: "ask", opened: 1},
		{name: "no answer", input: "", data: good, mode: "ask"},
		{name: "one refused URL declines all", input: "y\n\ny\n\n", data: mixed, mode: "ask", shows: []string{"refuses to show"}},
		{name: "decline mode", input: "y\n\n", data: good, mode: "decline", shows: []string{"Declined (--connect decline)."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tty := &fakeTerminal{Reader: strings.NewReader(tc.input)}
			p := newConnectPrompt(tty, tty)
			p.mode = tc.mode
			var mu sync.Mutex
			var opened []string
			p.open = func(_ context.Context, u string) error {
				mu.Lock()
				defer mu.Unlock()
				opened = append(opened, u)
				return nil
			}
			a := newBridgeAsker(c, "https://mcp.example.com/mcp", p)
			got, err := a.elicit(context.Background(), []byte(tc.data))
			if err != nil || got != tc.want {
				t.Fatalf("elicit = %v, %v; want %v", got, err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(opened) != tc.opened {
				t.Fatalf("opened %q", opened)
			}
			s := tty.out.String()
			for _, want := range tc.shows {
				if !strings.Contains(s, want) {
					t.Fatalf("the terminal lacks %q:\n%s", want, s)
				}
			}
			if strings.Contains(s, "file:") {
				t.Fatalf("a refused URL was shown:\n%s", s)
			}
		})
	}
}

// TestBridgeAskerCancelled: a request the host cancels while the user is
// being asked returns at once, and the answer typed later opens nothing.
func TestBridgeAskerCancelled(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	reading := make(chan struct{})
	var once sync.Once
	tty := &fakeTerminal{Reader: readerFunc(func(b []byte) (int, error) {
		once.Do(func() { close(reading) })
		return pr.Read(b)
	})}
	p := newConnectPrompt(tty, tty)
	opened := make(chan string, 1)
	p.open = func(_ context.Context, u string) error { opened <- u; return nil }
	a := newBridgeAsker(c, "https://mcp.example.com/mcp", p)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := a.elicit(ctx, []byte(`{"elicitations":[{"mode":"url","message":"m","url":"https://as.example.com/connect/x"}]}`))
		res <- err
	}()
	<-reading // the user is being asked
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("elicit: %v", err)
	}
	// The prompt may still read the user's next line; it must open nothing.
	go func() { _, _ = io.WriteString(pw, "y\n\n"); _ = pw.Close() }()
	// The turn comes back once the stale prompt is over: the next ask waits for it.
	ok, err := a.elicit(context.Background(), []byte(`{"elicitations":[{"mode":"url","message":"m","url":"https://as.example.com/connect/x"}]}`))
	if ok || err != nil {
		t.Fatalf("after the pipe closed: %v, %v", ok, err)
	}
	select {
	case u := <-opened:
		t.Fatalf("a cancelled request opened %s", u)
	default:
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }
