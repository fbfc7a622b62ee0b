package dpop_test

import (
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
)

func TestNormalizeHTU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "already normal", in: "https://h.example/mcp", want: "https://h.example/mcp"},
		{name: "scheme and host case", in: "HTTPS://H.Example/Mcp", want: "https://h.example/Mcp"},
		{name: "default https port", in: "https://h:443/x", want: "https://h/x"},
		{name: "default http port", in: "http://h:80/x", want: "http://h/x"},
		{name: "other port kept", in: "https://h:8443/x", want: "https://h:8443/x"},
		{name: "port leading zeros", in: "https://h:0443/x", want: "https://h/x"},
		{name: "empty path", in: "https://h", want: "https://h/"},
		{name: "query and fragment dropped", in: "https://h/x?a=1&b=2#frag", want: "https://h/x"},
		{name: "trailing slash kept", in: "https://h/mcp/", want: "https://h/mcp/"},
		{name: "dot segments", in: "https://h/a/./b/../c", want: "https://h/a/c"},
		{name: "dot dot above root", in: "https://h/../x", want: "https://h/x"},
		{name: "unreserved percent-encoding decoded", in: "https://h/%7Euser/%6dcp", want: "https://h/~user/mcp"},
		{name: "reserved percent-encoding upper-cased", in: "https://h/a%2fb", want: "https://h/a%2Fb"},
		{name: "IPv6 literal", in: "https://[::1]:8443/x", want: "https://[::1]:8443/x"},
		{name: "IPv6 default port", in: "https://[FE80::1]:443/x", want: "https://[fe80::1]/x"},
		{name: "relative", in: "/mcp", wantErr: true},
		{name: "ftp", in: "ftp://h/x", wantErr: true},
		{name: "user info", in: "https://user@h/x", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "bad port", in: "https://h:99999/x", wantErr: true},
		{name: "opaque", in: "https:h/x", wantErr: true},
		{name: "space", in: "https://h/a b", wantErr: true},
		{name: "Kelvin sign, lower-cased to k by Unicode rules", in: "https://\u212Aey.example/x", wantErr: true},
		{name: "long s", in: "https://aſ.example/x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := dpop.NormalizeHTU(tt.in)
			if tt.wantErr {
				if !errors.Is(err, dpop.ErrInvalidRequest) {
					t.Fatalf("NormalizeHTU(%q) = %q, %v; want ErrInvalidRequest", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeHTU(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			again, err := dpop.NormalizeHTU(got)
			if err != nil || again != got {
				t.Fatalf("not idempotent: %q -> %q (%v)", got, again, err)
			}
		})
	}
}
