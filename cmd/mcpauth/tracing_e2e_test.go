package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// otlpReceiver is a local OTLP/HTTP trace receiver: it decodes each
// export request (protobuf) and keeps the spans' names and attributes.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	name, traceID string
	attrs         map[string]string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				a := map[string]string{}
				for _, kv := range s.Attributes {
					a[kv.Key] = kv.Value.String()
				}
				o.spans = append(o.spans, receivedSpan{name: s.Name, traceID: string(s.TraceId), attrs: a})
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) all() []receivedSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]receivedSpan(nil), o.spans...)
}

// TestProtectExportsTraces runs `mcpauth protect` with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP receiver: the
// request's authorization decision and the proxying reach it as spans of
// the trace the client's traceparent started, the upstream receives that
// trace in its own traceparent, and no span holds the token.
func TestProtectExportsTraces(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "protect-under-test")

	const res = "http://127.0.0.1:9/mcp"
	asSrv := httptest.NewUnstartedServer(nil)
	as, err := authserver.New(authserver.Config{
		Issuer: "http://" + asSrv.Listener.Addr().String(), InsecureAllowHTTPLoopback: true, Scopes: []string{"mcp:tools"},
		DefaultResource: res,
		Clients:         []authserver.Client{{ID: "svc", Secret: "svc-secret", GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	asSrv.Config.Handler = as
	asSrv.Start()
	defer asSrv.Close()

	var upstreamParent string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamParent = r.Header.Get("traceparent")
		okUpstream(w, r)
	}))
	defer up.Close()

	line, stop := startCommand(t, "protect", "--addr", "127.0.0.1:0", "--upstream", up.URL+"/mcp", "--resource", res,
		"--issuer", asSrv.URL, "--insecure-http", "--log-level", "warn")
	addr := strings.Fields(strings.TrimPrefix(line, "listening on "))[0]

	form := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}, "resource": {res}}
	treq, _ := http.NewRequest(http.MethodPost, asSrv.URL+"/token", strings.NewReader(form.Encode()))
	treq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	treq.SetBasicAuth("svc", "svc-secret")
	tresp, err := http.DefaultClient.Do(treq)
	if err != nil {
		t.Fatal(err)
	}
	var tok oauthmeta.TokenResponse
	_ = json.NewDecoder(tresp.Body).Decode(&tok)
	tresp.Body.Close()
	if tok.AccessToken == "" {
		t.Fatalf("no token: %d", tresp.StatusCode)
	}

	const traceID = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest(http.MethodPost, addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("proxied request: %d", resp.StatusCode)
	}
	if code, stderr := stop(); code != 0 { // flushes the spans
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(upstreamParent, "00-"+traceID+"-") || strings.Contains(upstreamParent, "b7ad6b7169203331") {
		t.Errorf("upstream traceparent %q: want the client's trace with protect's span as parent", upstreamParent)
	}
	got := map[string]receivedSpan{}
	for _, s := range recv.all() {
		got[s.name] = s
		for k, v := range s.attrs {
			for _, part := range strings.Split(tok.AccessToken, ".") {
				if strings.Contains(v, part) {
					t.Errorf("span %s attribute %s holds the token", s.name, k)
				}
			}
		}
	}
	for _, name := range []string{"mcpauth.resource.request", "mcpauth.resource.verify", "mcpauth.protect.upstream"} {
		s, ok := got[name]
		if !ok {
			t.Errorf("receiver lacks span %s (got %v)", name, got)
			continue
		}
		if hexID := strings.ToLower(hexOf(s.traceID)); hexID != traceID {
			t.Errorf("span %s in trace %s, want %s", name, hexID, traceID)
		}
	}
	if d := got["mcpauth.resource.request"].attrs["mcpauth.decision"]; !strings.Contains(d, "allow") {
		t.Errorf("decision attribute %q", d)
	}
}

func hexOf(b string) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for i := 0; i < len(b); i++ {
		out = append(out, digits[b[i]>>4], digits[b[i]&15])
	}
	return string(out)
}
