package authserver

import "testing"

func TestUpstreamAllowList(t *testing.T) {
	verified := &UpstreamIdentity{Subject: "s1", Email: "Bob@Example.com", EmailVerified: true, Groups: []string{"eng"}}
	unverified := &UpstreamIdentity{Subject: "s2", Email: "eve@example.com"}
	tests := []struct {
		name  string
		allow AllowList
		id    *UpstreamIdentity
		want  bool
	}{
		{"domain", AllowList{EmailDomains: []string{"example.com"}}, verified, true},
		{"domain case", AllowList{EmailDomains: []string{"EXAMPLE.COM"}}, verified, true},
		{"other domain", AllowList{EmailDomains: []string{"example.org"}}, verified, false},
		{"parent domain only", AllowList{EmailDomains: []string{"ample.com"}}, verified, false},
		{"subdomain not implied", AllowList{EmailDomains: []string{"example.com"}}, &UpstreamIdentity{Email: "x@a.example.com", EmailVerified: true}, false},
		{"unverified email refused", AllowList{EmailDomains: []string{"example.com"}}, unverified, false},
		{"unverified email allowed when asked", AllowList{EmailDomains: []string{"example.com"}, InsecureAllowUnverifiedEmail: true}, unverified, true},
		{"user by email", AllowList{Users: []string{"bob@example.com"}}, verified, true},
		{"user by email unverified", AllowList{Users: []string{"eve@example.com"}}, unverified, false},
		{"user by sub", AllowList{Users: []string{"s2"}}, unverified, true},
		{"email entry never matches a sub", AllowList{Users: []string{"eve@example.com"}},
			&UpstreamIdentity{Subject: "eve@example.com", Email: "eve@example.com"}, false},
		{"group", AllowList{Groups: []string{"eng"}}, verified, true},
		{"other group", AllowList{Groups: []string{"ops"}}, verified, false},
		{"any user", AllowList{AllowAnyUser: true}, unverified, true},
		{"empty list admits nobody", AllowList{}, verified, false},
	}
	for _, tc := range tests {
		allow, err := compileAllowList(&tc.allow)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := allow.admits(keysOf(tc.id, tc.allow.InsecureAllowUnverifiedEmail)); got != tc.want {
			t.Errorf("%s: admits = %v, want %v", tc.name, got, tc.want)
		}
	}
}
