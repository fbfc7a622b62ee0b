package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRelay: answers as JSON and as event streams reach the host message
// by message, in order; a notification's 202 writes nothing; the
// 2026-07-28 headers mirror the body.
func TestRelay(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal([]byte(readBody(r)), &m)
		switch {
		case m.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "tools/list":
			jsonAnswer(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[]}}`)
		default:
			sse(w,
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2}}`,
				"{\"jsonrpc\":\"2.0\",\n\"id\":"+string(m.ID)+",\"result\":{\"content\":[],\"inputRequests\":{\"a\":{}},\"requestState\":\"opaque\"}}")
		}
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL + "/mcp", Header: http.Header{"X-Tenant": {"acme"}}})

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{` + meta + `}}`)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
	if m := h.recv(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("tools/list answer: %v", m)
	}
	h.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"écho","arguments":{},` + meta + `}}`)
	for i, want := range []float64{1, 2} {
		m := h.recv()
		p, _ := m["params"].(map[string]any)
		if m["method"] != "notifications/progress" || p["progress"] != want {
			t.Fatalf("message %d: %v", i, m)
		}
	}
	m := h.recv()
	r, _ := m["result"].(map[string]any)
	if m["id"] != "c" || r["requestState"] != "opaque" || r["inputRequests"] == nil {
		t.Fatalf("tools/call answer: %v", m)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("%d requests, want 3 (and no DELETE without a session)", len(seen))
	}
	// The three requests travel on their own connections, so the server
	// may see them in any order: find each by its Mcp-Method.
	byMethod := map[string]http.Header{}
	for _, h := range seen {
		byMethod[h.Get("Mcp-Method")] = h
	}
	if _, ok := byMethod["notifications/initialized"]; !ok {
		t.Errorf("no request with Mcp-Method notifications/initialized: %v", seen)
	}
	last, ok := byMethod["tools/call"]
	if !ok {
		t.Fatalf("no request with Mcp-Method tools/call: %v", seen)
	}
	checks := map[string]string{
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "=?base64?w6ljaG8=?=",
		"Mcp-Protocol-Version": "2026-07-28",
		"Accept":               "application/json, text/event-stream",
		"Content-Type":         "application/json",
		"X-Tenant":             "acme",
		"Mcp-Session-Id":       "",
	}
	for k, want := range checks {
		if got := last.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

// TestHostInput: a line that is not JSON, a batch and an oversized line get
// errors; the next message goes through.
func TestHostInput(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		jsonAnswer(w, `{"jsonrpc":"2.0","id":9,"result":{}}`)
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL, MaxMessageSize: 1024})
	cases := []struct {
		line string
		code int
	}{
		{"not json", CodeParseError},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","METHOD":"x","method":"y"}`, CodeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`, CodeInvalidRequest},
	}
	for _, c := range cases {
		h.send(c.line)
		if m := h.recv(); errorCode(m) != c.code || m["id"] != nil {
			t.Errorf("%.40s: %v, want code %d", c.line, m, c.code)
		}
	}
	h.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if m := h.recv(); m["id"] != 9.0 || m["result"] == nil {
		t.Fatalf("ping after bad input: %v", m)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want 1: bad input must not reach the server", n)
	}
}

// TestHostileServer: each kind of bad answer becomes a JSON-RPC error for
// the request, within the size limit, and the bridge goes on.
func TestHostileServer(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	const limit = 1 << 20
	cases := []struct {
		name    string
		handler http.HandlerFunc
		code    int
		text    string
	}{
		{"non-JSON body", func(w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, "<html>hello</html>") },
			CodeBadResponse, "not a JSON-RPC message"},
		{"50 MB JSON body", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`)
			chunk := strings.Repeat("x", 1<<20)
			for range 50 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `"}}`)
		}, CodeBadResponse, "over the limit"},
		{"endless event", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: ")
			chunk := strings.Repeat("y", 64<<10)
			for r.Context().Err() == nil {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}, CodeBadResponse, "over the limit"},
		{"event that is not JSON-RPC", func(w http.ResponseWriter, _ *http.Request) { sse(w, `{"hello":"world"}`) },
			CodeBadResponse, "not a JSON-RPC message"},
		{"stream ends before the answer", func(w http.ResponseWriter, _ *http.Request) {
			sse(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
		}, CodeUnreachable, "closed the stream before answering"},
		{"HTML error page", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<h1>bad gateway</h1>")
		}, CodeBadResponse, "HTTP 502"},
		{"other content type", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "ok")
		}, CodeBadResponse, `"text/plain"`},
		{"202 for a request", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) },
			CodeBadResponse, "without answering"},
		{"answer with another id", func(w http.ResponseWriter, _ *http.Request) {
			jsonAnswer(w, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		}, CodeBadResponse, "not the answer to this request"},
		{"redirect to another origin", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal?x=1", http.StatusTemporaryRedirect)
		}, CodeBadResponse, "redirected (HTTP 307) to " + other.URL + ";"},
		{"401 after authorization", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
		}, CodeAuthorization, "HTTP 401 invalid_token"},
	}
	// The parallel cases run inside one group, so that the check below
	// (and the deferred Close of other) comes after them, not before.
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				var n atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						c.handler(w, r)
						return
					}
					jsonAnswer(w, `{"jsonrpc":"2.0","id":2,"result":{"ok":true}}`)
				}))
				defer srv.Close()
				h := startBridge(t, context.Background(), Config{URL: srv.URL, MaxMessageSize: limit,
					Header: http.Header{"X-Api-Key": {"secret"}}})
				h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
				m := h.recv()
				if m["method"] != nil { // a notification relayed before the failure
					m = h.recv()
				}
				if errorCode(m) != c.code || m["id"] != 1.0 || !strings.Contains(errorText(m), c.text) {
					t.Fatalf("got %v, want code %d containing %q", m, c.code, c.text)
				}
				h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
				if m := h.recv(); m["id"] != 2.0 || m["result"] == nil {
					t.Fatalf("the next request: %v", m)
				}
				if err := h.close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	if elsewhere.Load() != 0 {
		t.Error("a request followed the redirect to another origin")
	}
}

// TestServerGone: a server that dies mid-stream gives the host an error;
// the next message reaches the server once it is back.
func TestServerGone(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1: // progress, then the connection dies
			sse(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			jsonAnswer(w, `{"jsonrpc":"2.0","id":3,"result":{}}`)
		}
	}))
	defer srv.Close()
	// A listener that refuses: the address of a closed one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()

	h := startBridge(t, context.Background(), Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	if m := h.recv(); m["method"] != "notifications/progress" {
		t.Fatalf("progress: %v", m)
	}
	if m := h.recv(); errorCode(m) != CodeUnreachable || m["id"] != 1.0 {
		t.Fatalf("after the server died: %v", m)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if m := h.recv(); m["id"] != 3.0 || m["result"] == nil {
		t.Fatalf("next message: %v", m)
	}

	h2 := startBridge(t, context.Background(), Config{URL: deadURL})
	h2.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if m := h2.recv(); errorCode(m) != CodeUnreachable || !strings.Contains(errorText(m), "the next message tries again") {
		t.Fatalf("connection refused: %v", m)
	}
}

// TestShutdownHostNotReading: a host that stops reading stdout (the pipe
// stays open but full) cannot keep Run from returning after stdin closes:
// the answers blocked on it are given up after a second grace period.
func TestShutdownHostNotReading(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		jsonAnswer(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	b, err := New(Config{URL: srv.URL, Transport: http.DefaultTransport, GracePeriod: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe() // never read: every write blocks
	defer stdoutR.Close()
	ran := make(chan error, 1)
	go func() { ran <- b.Run(context.Background(), stdinR, stdoutW) }()
	if _, err := io.WriteString(stdinW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	stdinW.Close()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return while the host was not reading stdout")
	}
}

// TestShutdownSlowHost: a host that reads stdout late, but reads it, still
// gets the CodeShutdown answer of a request cancelled after a very short
// grace period: only a host that makes no progress for a second is
// given up on.
func TestShutdownSlowHost(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		sse(w)
		close(started)
		<-r.Context().Done()
		close(cancelled)
	}))
	defer srv.Close()
	b, err := New(Config{URL: srv.URL, Transport: http.DefaultTransport.(*http.Transport).Clone(), GracePeriod: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	ran := make(chan error, 1)
	go func() {
		err := b.Run(context.Background(), stdinR, stdoutW)
		stdoutW.Close()
		ran <- err
	}()
	if _, err := io.WriteString(stdinW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	stdinW.Close()
	<-cancelled
	time.Sleep(50 * time.Millisecond) // the host is busy: fifty grace periods pass before it reads
	out, err := io.ReadAll(stdoutR)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil || errorCode(m) != CodeShutdown {
		t.Fatalf("stdout %q, want one CodeShutdown answer", out)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestShutdown: stdin closed with a request in flight: it gets the grace
// period, then a CodeShutdown error; the session is deleted; Run returns
// nil. A request that finishes within the grace period is answered.
func TestShutdown(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var deleted atomic.Value
	cancelled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deleted.Store(r.Header.Get("Mcp-Session-Id"))
			return
		}
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body := readBody(r)
		switch {
		case strings.Contains(body, `"initialize"`):
			w.Header().Set("Mcp-Session-Id", "s-1")
			jsonAnswer(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}`)
		case strings.Contains(body, `"quick"`):
			<-release
			jsonAnswer(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		case strings.Contains(body, `"stuck"`):
			sse(w) // headers only; never answers
			<-r.Context().Done()
			close(cancelled)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()

	h := startBridge(t, context.Background(), Config{URL: srv.URL, GracePeriod: 200e6})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"quick"}}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stuck"}}`)
	h.in.Close()
	close(release)
	got := map[float64]int{}
	for range 2 {
		m := h.recv()
		id, _ := m["id"].(float64)
		got[id] = errorCode(m)
	}
	if got[1] != 0 || got[2] != CodeShutdown {
		t.Fatalf("answers after stdin closed: %v (want 1 answered, 2 cancelled with %d)", got, CodeShutdown)
	}
	if err := h.close(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if deleted.Load() != "s-1" {
		t.Errorf("DELETE of the session: %v", deleted.Load())
	}
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Error("the stuck request was not cancelled at the server")
	}
}

// TestSignal: the end of Run's ctx (SIGINT/SIGTERM in the command) shuts
// down like the end of stdin.
func TestSignal(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBody(r) // so that the server notices the client going away
		sse(w)
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	h := startBridge(t, ctx, Config{URL: srv.URL, GracePeriod: 1e6})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	<-started
	cancel()
	if m := h.recv(); errorCode(m) != CodeShutdown {
		t.Fatalf("%v", m)
	}
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.done <- nil
	if m, ok := <-h.lines; ok {
		t.Fatalf("unexpected %v", m)
	}
}

// TestCancelledNotification: notifications/cancelled is sent on and closes
// the cancelled request's stream; the request gets no answer.
func TestCancelledNotification(t *testing.T) {
	t.Parallel()
	started, closed := make(chan struct{}), make(chan struct{})
	var notified atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if strings.Contains(body, "notifications/cancelled") {
			notified.Store(true)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if strings.Contains(body, `"ping"`) {
			jsonAnswer(w, `{"jsonrpc":"2.0","id":2,"result":{}}`)
			return
		}
		sse(w)
		close(started)
		<-r.Context().Done()
		close(closed)
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"x"}}`)
	<-started // the request is in flight (its stream is open)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long"}}`)
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled request's stream was not closed")
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := h.recv(); m["id"] != 2.0 {
		t.Fatalf("the cancelled request was answered: %v", m)
	}
	if !notified.Load() {
		t.Error("notifications/cancelled not sent on")
	}
}

// TestHeaderValue: the SEP-2243 encoding.
func TestHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"echo":            "echo",
		"":                "",
		"a b":             "a b",
		" lead":           "=?base64?IGxlYWQ=?=",
		"tab\t":           "=?base64?dGFiCQ==?=",
		"line\nbreak":     "=?base64?bGluZQpicmVhaw==?=",
		"=?base64?eA==?=": "=?base64?PT9iYXNlNjQ/ZUE9PT89?=",
		"file:///etc":     "file:///etc",
	} {
		if got := HeaderValue(in); got != want {
			t.Errorf("HeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNewRefusesCredentialHeaders: static headers never carry a
// credential, whatever the case of the name; other headers are accepted.
func TestNewRefusesCredentialHeaders(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Authorization", "authorization", "Proxy-Authorization", "Cookie", "DPoP", "dpop"} {
		_, err := New(Config{URL: "https://mcp.example.com/mcp", Transport: http.DefaultTransport, Header: http.Header{name: {"x"}}})
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Header %s: err = %v, want refused", name, err)
		}
	}
	if _, err := New(Config{URL: "https://mcp.example.com/mcp", Transport: http.DefaultTransport, Header: http.Header{"X-Tenant": {"a"}}}); err != nil {
		t.Errorf("X-Tenant: %v", err)
	}
}

func ExampleNew() {
	b, err := New(Config{URL: "https://mcp.example.com/mcp", Transport: http.DefaultTransport})
	fmt.Println(b != nil, err)
	// Output: true <nil>
}

// TestNewSession: a 2025-11-25 server that forgot the session (404) gets
// the host's initialize again, under the bridge's id, and
// notifications/initialized; the request is then sent in the new session
// and answered. The host sees only its own answers.
func TestNewSession(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	current := "s-1"
	var log []string
	notified := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		mu.Lock()
		defer mu.Unlock()
		log = append(log, r.Method+" "+r.Header.Get("Mcp-Session-Id")+" "+r.Header.Get("Mcp-Method"))
		switch {
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Method == http.MethodDelete:
		case strings.Contains(body, `"initialize"`):
			if !strings.Contains(body, `"clientInfo":{"name":"host"}`) {
				t.Errorf("initialize without the host's params: %s", body)
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal([]byte(body), &m)
			w.Header().Set("Mcp-Session-Id", current)
			jsonAnswer(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25"}}`)
		case r.Header.Get("Mcp-Session-Id") != current:
			http.Error(w, "no such session", http.StatusNotFound)
		case strings.Contains(body, `"method"`) && !strings.Contains(body, `"id"`):
			w.WriteHeader(http.StatusAccepted)
			notified <- struct{}{}
		default:
			jsonAnswer(w, `{"jsonrpc":"2.0","id":5,"result":{"session":"`+current+`"}}`)
		}
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"host"}}}`)
	if m := h.recv(); m["id"] != 0.0 {
		t.Fatalf("initialize: %v", m)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	<-notified
	mu.Lock()
	current = "s-2" // the server restarted
	mu.Unlock()
	h.send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	m := h.recv()
	if r, _ := m["result"].(map[string]any); m["id"] != 5.0 || r["session"] != "s-2" {
		t.Fatalf("after the new session: %v", m)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(log, "\n")
	for _, want := range []string{"POST s-1 tools/list", "POST  initialize", "POST s-2 notifications/initialized", "POST s-2 tools/list", "DELETE s-2 "} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q in\n%s", want, joined)
		}
	}
}

// TestResumeStream: a 2025-11-25 POST stream that the server closes
// before the answer, after an event with an id, is resumed with GET and
// Last-Event-ID; the host gets the answer. Without a session (2026-07-28)
// the same break is an error.
func TestResumeStream(t *testing.T) {
	t.Parallel()
	var resumedWith atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
			resumedWith.Store(r.Header.Get("Last-Event-ID"))
			sse(w, `{"jsonrpc":"2.0","id":1,"result":{"resumed":true}}`)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Method == http.MethodDelete:
		case strings.Contains(body, `"initialize"`):
			w.Header().Set("Mcp-Session-Id", "s")
			jsonAnswer(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}`)
		case strings.Contains(body, `"tools/call"`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "retry: 10\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	if m := h.recv(); m["method"] != "notifications/progress" {
		t.Fatalf("progress: %v", m)
	}
	if m := h.recv(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("after the resumption: %v", m)
	}
	if resumedWith.Load() != "e1" {
		t.Errorf("Last-Event-ID %v", resumedWith.Load())
	}

	h2 := startBridge(t, context.Background(), Config{URL: srv.URL})
	h2.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	h2.recv()
	if m := h2.recv(); errorCode(m) != CodeUnreachable {
		t.Fatalf("2026-07-28 stream cut: %v", m)
	}
}

// TestResumeKeepsSession: a broken stream is resumed in the session it
// belonged to, even when another request started a new session while the
// resumption waited for its retry delay: the event id means nothing in the
// new one.
func TestResumeKeepsSession(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	current := "s-1"
	resumedIn := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		mu.Lock()
		cur := current
		mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
			select {
			case resumedIn <- r.Header.Get("Mcp-Session-Id"):
			default:
			}
			sse(w, `{"jsonrpc":"2.0","id":1,"result":{"resumed":true}}`)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Method == http.MethodDelete:
		case strings.Contains(body, `"initialize"`):
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal([]byte(body), &m)
			w.Header().Set("Mcp-Session-Id", cur)
			jsonAnswer(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-11-25"}}`)
		case r.Header.Get("Mcp-Session-Id") != cur:
			http.Error(w, "no such session", http.StatusNotFound)
		case strings.Contains(body, `"tools/call"`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "retry: 1500\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		case strings.Contains(body, `"tools/list"`):
			jsonAnswer(w, `{"jsonrpc":"2.0","id":2,"result":{"session":"`+cur+`"}}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	if m := h.recv(); m["method"] != "notifications/progress" {
		t.Fatalf("progress: %v", m)
	}
	// The stream broke; while its resumption waits, the server forgets
	// s-1 and the next request starts s-2.
	mu.Lock()
	current = "s-2"
	mu.Unlock()
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := h.recv(); m["id"] != 2.0 {
		t.Fatalf("tools/list: %v", m)
	}
	select {
	case <-resumedIn:
		t.Fatal("resumed before the new session started: the retry delay was too short for this machine")
	default:
	}
	select {
	case sid := <-resumedIn:
		if sid != "s-1" {
			t.Errorf("resumed in session %q, want s-1, the stream's own", sid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resumption")
	}
	h.recv() // the answer to id 1
}

// TestPrimingEvent: the priming event of a 2025-11-25 stream (an id and
// empty data) is not relayed and is no error: the answer after it
// reaches the host, and a stream that breaks right after it is resumed
// from its id.
func TestPrimingEvent(t *testing.T) {
	t.Parallel()
	var resumedWith atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
			resumedWith.Store(r.Header.Get("Last-Event-ID"))
			sse(w, `{"jsonrpc":"2.0","id":2,"result":{"resumed":true}}`)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Method == http.MethodDelete:
		case strings.Contains(body, `"initialize"`):
			w.Header().Set("Mcp-Session-Id", "s")
			jsonAnswer(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}`)
		case strings.Contains(body, `"id":1`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "id: p1\ndata:\n\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		case strings.Contains(body, `"id":2`):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "retry: 10\nid: p2\ndata:\n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	h.recv()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	if m := h.recv(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("answer after a priming event: %v", m)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	if m := h.recv(); m["id"] != 2.0 || m["result"] == nil {
		t.Fatalf("after a priming event and a break: %v", m)
	}
	if resumedWith.Load() != "p2" {
		t.Errorf("Last-Event-ID %v, want p2", resumedWith.Load())
	}
}

// TestListenStream: a 2026-07-28 subscriptions/listen stream is relayed
// event by event while it stays open: the server sends the next
// notification only after the host has received the previous one.
func TestListenStream(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	var method atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method.Store(r.Header.Get("Mcp-Method"))
		readBody(r)
		sse(w)
		for i := 1; i <= 3; i++ {
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
			_, _ = fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"file:///%d\"}}\n\n", i)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	h := startBridge(t, context.Background(), Config{URL: srv.URL, GracePeriod: 1e6})
	h.send(`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	for i := 1; i <= 3; i++ {
		next <- struct{}{}
		m := h.recv()
		p, _ := m["params"].(map[string]any)
		if p["uri"] != fmt.Sprintf("file:///%d", i) {
			t.Fatalf("notification %d: %v", i, m)
		}
	}
	if method.Load() != "subscriptions/listen" {
		t.Errorf("Mcp-Method %v", method.Load())
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	if m := h.recv(); errorCode(m) != CodeShutdown || m["id"] != "l" {
		t.Errorf("the listen request at exit: %v", m)
	}
}
