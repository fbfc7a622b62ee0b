package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// host drives a Bridge as a stdio MCP host would: it writes lines to the
// bridge's stdin and reads its stdout, checking that every line the
// bridge writes is one JSON-RPC 2.0 message.
type host struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan map[string]any
	done  chan error
}

func startBridge(t *testing.T, ctx context.Context, cfg Config) *host {
	t.Helper()
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if cfg.Logger == nil {
		logs := &syncLog{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the bridge's log:\n%s", logs)
			}
		})
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &host{t: t, in: inW, lines: make(chan map[string]any, 1024), done: make(chan error, 1)}
	go func() {
		err := b.Run(ctx, inR, outW)
		outW.Close()
		h.done <- err
	}()
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 128<<20)
		for sc.Scan() {
			h.lines <- checkJSONRPCLine(t, sc.Bytes())
		}
		if err := sc.Err(); err != nil {
			t.Errorf("reading the bridge's stdout: %v", err)
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		inR.Close()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Error("the bridge did not stop")
		}
	})
	return h
}

// syncLog collects a bridge's log, to show it when a test fails.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// checkJSONRPCLine fails the test unless line is one JSON-RPC 2.0 message.
func checkJSONRPCLine(t *testing.T, line []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || m["jsonrpc"] != "2.0" {
		t.Errorf("stdout carried a line that is not a JSON-RPC message: %.200q", line)
		return nil
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if hasMethod == (hasResult || hasError) || (hasResult && hasError) {
		t.Errorf("stdout carried an invalid JSON-RPC message: %.200s", line)
	}
	return m
}

func (h *host) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("writing to the bridge: %v", err)
	}
}

// recv returns the next message the bridge wrote (the timeout only guards
// against a hang).
func (h *host) recv() map[string]any {
	h.t.Helper()
	select {
	case m, ok := <-h.lines:
		if !ok {
			h.t.Fatal("the bridge closed stdout")
		}
		return m
	case <-time.After(30 * time.Second):
		h.t.Fatal("no message from the bridge")
	}
	return nil
}

// close closes stdin and returns Run's result.
func (h *host) close() error {
	h.t.Helper()
	h.in.Close()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(30 * time.Second):
		h.t.Fatal("the bridge did not stop after stdin closed")
	}
	return nil
}

// errorCode returns the error code of m, 0 if it is not an error.
func errorCode(m map[string]any) int {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0
	}
	c, _ := e["code"].(float64)
	return int(c)
}

func errorText(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func sse(w http.ResponseWriter, msgs ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for _, m := range msgs {
		_, _ = io.WriteString(w, "event: message\ndata: "+strings.ReplaceAll(m, "\n", "\ndata: ")+"\n\n")
		w.(http.Flusher).Flush()
	}
}

func jsonAnswer(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, msg)
}

// readBody reads a test request's body.
func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return strings.TrimSpace(string(b))
}

// checkedWriter passes the bridge's stdout on to w, checking each line
// once its newline has been written (the bridge writes a message and its
// newline separately). The bridge's writes are serialised.
type checkedWriter struct {
	t       *testing.T
	w       io.Writer
	pending []byte
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.pending = append(c.pending, p...)
	for {
		i := bytes.IndexByte(c.pending, '\n')
		if i < 0 {
			break
		}
		checkJSONRPCLine(c.t, c.pending[:i])
		c.pending = c.pending[i+1:]
	}
	return c.w.Write(p)
}
