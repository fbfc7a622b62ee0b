package selfcheck

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/bridge"
)

const fuzzToken = "tok-ABC.def_123"

func fuzzRunner() *runner {
	return &runner{cfg: &prepared{Config: Config{Token: fuzzToken}}, report: &Report{}}
}

// FuzzDetail: whatever the server sends, a detail holds no token, no
// control characters, and stays bounded (RS-24 for the checker's own
// output; terminal safety).
func FuzzDetail(f *testing.F) {
	for _, s := range []string{"", fuzzToken, "x" + fuzzToken + "y", "\x1b[31mred", url.QueryEscape(fuzzToken + " "), strings.Repeat("é", 500) + fuzzToken} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := fuzzRunner()
		r.add("X-00", "fuzz", StatusPass, "%s %s", s, r.quote(s))
		d := r.report.Results[0].Detail
		if strings.Contains(d, fuzzToken) || strings.Contains(d, url.QueryEscape(fuzzToken)) {
			t.Fatalf("token in %q", d)
		}
		if len(d) > maxDetail+len("…") || !utf8.ValidString(d) {
			t.Fatalf("detail too long or invalid: %d bytes", len(d))
		}
		for _, c := range d {
			if !unicode.IsPrint(c) {
				t.Fatalf("unprintable %U in %q", c, d)
			}
		}
	})
}

// FuzzRPCOutcome: any body, JSON or event stream, is read without a panic,
// and only a JSON-RPC object with a result counts as success.
func FuzzRPCOutcome(f *testing.F) {
	f.Add("application/json", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
	f.Add("application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`)
	f.Add("text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	f.Add("text/event-stream", "data:\n")
	f.Add("text/html", "<html>")
	f.Add("application/json", `{"result":1,"result":2}`)
	f.Fuzz(func(t *testing.T, ct, body string) {
		r := fuzzRunner()
		ok, what := r.rpcOutcome(exchange{status: 200, header: http.Header{"Content-Type": {ct}}, body: []byte(body)})
		if ok && !strings.Contains(body, `"result"`) {
			t.Fatalf("success without a result: %q", body)
		}
		if what == "" {
			t.Fatal("empty description")
		}
	})
}

func TestHeaderValue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"admin_echo", "admin_echo"},
		{"outil-été", "=?base64?b3V0aWwtw6l0w6k=?="},
		{" padded", "=?base64?IHBhZGRlZA==?="},
		{"=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="},
	} {
		if got := bridge.HeaderValue(tt.in); got != tt.want {
			t.Errorf("headerValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
