package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestDownstreamAPI: the forecast tool reaches the API with a token of its
// own, and forwarding the caller's token is refused by the guard (RS-19).
func TestDownstreamAPI(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{`forecast: 200 {"for":"dyn_`, `"forecast":"sunny"`, "forward_my_token: refused by the guard (header Authorization)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
