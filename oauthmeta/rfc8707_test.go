package oauthmeta

import (
	"errors"
	"testing"
)

func TestCanonicalResource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		wantErr  error
	}{
		{in: "https://mcp.example.com/mcp", want: "https://mcp.example.com/mcp"},
		{in: "HTTPS://MCP.Example.COM/mcp", want: "https://mcp.example.com/mcp"},
		{in: "https://mcp.example.com/MCP", want: "https://mcp.example.com/MCP"},
		{in: "https://mcp.example.com:443/mcp", want: "https://mcp.example.com/mcp"},
		{in: "http://127.0.0.1:80/mcp", want: "http://127.0.0.1/mcp"},
		{in: "https://mcp.example.com:8443", want: "https://mcp.example.com:8443"},
		{in: "https://mcp.example.com/", want: "https://mcp.example.com"},
		{in: "https://mcp.example.com/mcp/", want: "https://mcp.example.com/mcp/"},
		{in: "https://[::1]:8443/mcp", want: "https://[::1]:8443/mcp"},
		{in: "https://mcp.example.com/mcp?tenant=a", want: "https://mcp.example.com/mcp?tenant=a"},
		{in: "https://mcp.example.com/a%2Fb", want: "https://mcp.example.com/a%2Fb"},
		{in: "https://mcp.example.com/mcp#x", wantErr: ErrInvalidResource},
		{in: "https://u@mcp.example.com/mcp", wantErr: ErrInvalidResource},
		{in: "mcp.example.com/mcp", wantErr: ErrInvalidResource},
		{in: "urn:example:mcp", wantErr: ErrInvalidResource},
		{in: "", wantErr: ErrInvalidResource},
		{in: "A://::", wantErr: ErrInvalidResource},
		{in: "https://h:/mcp", wantErr: ErrInvalidResource},
		{in: "https://h:123456/mcp", wantErr: ErrInvalidResource},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalResource(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSameResource covers the comparison behind requirement RS-08: uppercase
// scheme and host are the same resource, another host or path is not.
func TestSameResource(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"https://h/mcp", "HTTPS://H/mcp", true},
		{"https://h/mcp", "https://h:443/mcp", true},
		{"https://h/mcp", "https://h/mcp/", false},
		{"https://h/mcp", "https://other/mcp", false},
		{"https://h/mcp", "https://h/mcp2", false},
		{"https://h/mcp", "http://h/mcp", false},
		{"https://h/mcp#x", "https://h/mcp#x", false},
	} {
		if got := SameResource(tt.a, tt.b); got != tt.want {
			t.Errorf("RS-08 SameResource(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzCanonicalResource(f *testing.F) {
	f.Add("https://mcp.example.com:443/mcp")
	f.Add("HTTP://[::1]:80/")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := CanonicalResource(in)
		if err != nil {
			return
		}
		again, err := CanonicalResource(c)
		if err != nil || again != c {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, c, again, err)
		}
	})
}
