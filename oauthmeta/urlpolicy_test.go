package oauthmeta

import (
	"errors"
	"testing"
)

// TestURLPolicyCheckURL covers requirement CL-22 (authorization URLs use https,
// http only for loopback; javascript:, data:, file:, vbscript: refused) and
// the URL half of CL-23.
func TestURLPolicyCheckURL(t *testing.T) {
	t.Parallel()
	strict := URLPolicy{}
	dev := URLPolicy{InsecureAllowHTTPLoopback: true}
	tests := []struct {
		name   string
		url    string
		policy URLPolicy
		ok     bool
	}{
		{"https", "https://as.example.com/authorize", strict, true},
		{"https with port and query", "https://as.example.com:8443/authorize?x=1", strict, true},
		{"CL-22 javascript", "javascript:alert(1)", dev, false},
		{"CL-22 javascript uppercase", "JavaScript:alert(1)", dev, false},
		{"CL-22 data", "data:text/html;base64,PHNjcmlwdD4=", dev, false},
		{"CL-22 file", "file:///etc/passwd", dev, false},
		{"CL-22 vbscript", "vbscript:msgbox(1)", dev, false},
		{"CL-22 ftp", "ftp://as.example.com/", dev, false},
		{"CL-22 http to remote host", "http://as.example.com/authorize", dev, false},
		{"CL-22 http to loopback needs switch", "http://127.0.0.1:9000/authorize", strict, false},
		{"http to 127.0.0.1 with switch", "http://127.0.0.1:9000/authorize", dev, true},
		{"http to 127.8.9.10 with switch", "http://127.8.9.10/authorize", dev, true},
		{"http to ::1 with switch", "http://[::1]:9000/authorize", dev, true},
		{"http to localhost with switch", "http://localhost:9000/authorize", dev, true},
		{"http to localhost.evil.com", "http://localhost.evil.com/authorize", dev, false},
		{"http to 127.0.0.1.nip.io", "http://127.0.0.1.nip.io/", dev, false},
		{"CL-23 http to metadata address", "http://169.254.169.254/latest/meta-data/", dev, false},
		{"fragment", "https://as.example.com/a#b", strict, false},
		{"empty fragment", "https://as.example.com/a#", strict, false},
		{"userinfo", "https://u:p@as.example.com/a", strict, false},
		{"relative", "/authorize", strict, false},
		{"scheme-relative", "//as.example.com/authorize", strict, false},
		{"no host", "https:///authorize", strict, false},
		{"opaque https", "https:as.example.com", strict, false},
		{"newline", "https://as.example.com/a\nb", strict, false},
		{"backslash", `https://as.example.com\@evil.com/`, strict, false},
		{"empty", "", strict, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.policy.CheckURL(tt.url)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrUnsafeURL) {
				t.Fatalf("error %v does not wrap ErrUnsafeURL", err)
			}
		})
	}
}

func TestCheckIssuer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		issuer string
		ok     bool
	}{
		{"https://as.example.com", true},
		{"https://as.example.com/tenant1", true},
		{"https://as.example.com/tenant1/", true},
		{"https://as.example.com?x=1", false},
		{"https://as.example.com?", false},
		{"https://as.example.com#", false},
		{"http://as.example.com", false},
	} {
		err := (URLPolicy{}).CheckIssuer(tt.issuer)
		if (err == nil) != tt.ok {
			t.Errorf("CheckIssuer(%q) = %v, want ok=%v", tt.issuer, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidIssuer) {
			t.Errorf("CheckIssuer(%q): %v does not wrap ErrInvalidIssuer", tt.issuer, err)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.255.0.1": true, "::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"localhost": true, "LOCALHOST": true,
		"10.0.0.1": false, "0.0.0.0": false, "::": false, "localhost.example": false, "fe80::1%lo": false, "": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
