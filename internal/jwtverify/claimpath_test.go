package jwtverify

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestParseClaimPath(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		names []string
	}{
		{"scp", []string{"scp"}},
		{"cognito:groups", []string{"cognito:groups"}},
		{"realm_access.roles", []string{"realm_access", "roles"}},
		{"resource_access.mcp-client.roles", []string{"resource_access", "mcp-client", "roles"}},
		{"/resource_access/my.app/roles", []string{"resource_access", "my.app", "roles"}},
		{"/https:~1~1example.com~1roles", []string{"https://example.com/roles"}},
		{"/a~0b", []string{"a~b"}},
		{"é.ü", []string{"é", "ü"}},
		{"a.b.c.d.e.f.g.h", []string{"a", "b", "c", "d", "e", "f", "g", "h"}},
	} {
		p, err := ParseClaimPath(tt.in)
		if err != nil || !reflect.DeepEqual(p.Names(), tt.names) || p.String() != tt.in || p.First() != tt.names[0] {
			t.Errorf("ParseClaimPath(%q) = %v, %v; want %v", tt.in, p.Names(), err, tt.names)
		}
	}
	for _, bad := range []string{"", ".", "a.", ".a", "a..b", "/", "/a/", "//a", "/a~2", "/a~", "a.b.c.d.e.f.g.h.i",
		"/a/b/c/d/e/f/g/h/i", "\xff", strings.Repeat("a", MaxClaimPathBytes+1)} {
		if _, err := ParseClaimPath(bad); !errors.Is(err, ErrClaimPath) {
			t.Errorf("ParseClaimPath(%q): %v, want ErrClaimPath", bad, err)
		}
	}
}

func TestMembersLookup(t *testing.T) {
	t.Parallel()
	type claims struct {
		Claims  `json:",inline"`
		Members Members `json:",unknown"`
	}
	var c claims
	payload := `{"iss":"x","scp":"a b","roles":["r"],"realm_access":{"roles":["k"],"n":null},"s":"str","z":null,` +
		`"resource_access":{"my.app":{"roles":["m"]}}}`
	if err := DecodeClaims([]byte(payload), &c); err != nil {
		t.Fatal(err)
	}
	if c.Issuer != "x" || c.Members["iss"] != nil {
		t.Fatalf("registered claim in Members: %+v", c)
	}
	for _, tt := range []struct {
		path, want string
		ok         bool
		err        error
	}{
		{"scp", `"a b"`, true, nil},
		{"roles", `["r"]`, true, nil},
		{"realm_access.roles", `["k"]`, true, nil},
		{"/resource_access/my.app/roles", `["m"]`, true, nil},
		{"resource_access.my.app.roles", "", false, nil},
		{"absent", "", false, nil},
		{"z", "", false, nil},
		{"realm_access.n", "", false, nil},
		{"realm_access.absent", "", false, nil},
		{"z.a", "", false, nil},
		{"s.a", "", false, ErrClaimType},
		{"roles.a", "", false, ErrClaimType},
	} {
		p, err := ParseClaimPath(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := c.Members.Lookup(p)
		if ok != tt.ok || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) || string(v) != tt.want {
			t.Errorf("Lookup(%s) = %s, %v, %v; want %s, %v, %v", tt.path, v, ok, err, tt.want, tt.ok, tt.err)
		}
	}
	if _, ok, _ := c.Members.Lookup(ClaimPath{}); ok {
		t.Error("the zero path found something")
	}
	for _, bad := range []string{`{"x":{"a":1,"a":2}}`, `{"x":[{"a":1,"a":2}]}`, `{"x":1,"x":2}`, "{\"x\":\"\xff\"}"} {
		var c claims
		if DecodeClaims([]byte(bad), &c) == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

func TestClaimStrings(t *testing.T) {
	t.Parallel()
	if s, err := ClaimString(jsontext.Value(`"a\u0062"`)); err != nil || s != "ab" {
		t.Errorf("ClaimString: %q, %v", s, err)
	}
	if s, err := ClaimStrings(jsontext.Value(` ["a","b"]`)); err != nil || !reflect.DeepEqual(s, []string{"a", "b"}) {
		t.Errorf("ClaimStrings: %q, %v", s, err)
	}
	for _, bad := range []string{`1`, `["a"]`, `{}`, `null`, `"\ud800"`} {
		if _, err := ClaimString(jsontext.Value(bad)); !errors.Is(err, ErrClaimType) {
			t.Errorf("ClaimString(%s): %v", bad, err)
		}
	}
	for _, bad := range []string{`"a"`, `[1]`, `[["a"]]`, `{}`, `[{"a":1}]`} {
		if _, err := ClaimStrings(jsontext.Value(bad)); !errors.Is(err, ErrClaimType) {
			t.Errorf("ClaimStrings(%s): %v", bad, err)
		}
	}
}

// FuzzClaimPath: a path that parses prints back as written and walks the
// same names a reference walk over the payload decoded into Go maps does;
// Lookup finds exactly the value the reference finds (absent and null
// alike), errs only where the reference meets a non-object on the way, and
// never panics. String decodes agree with the reference's types.
func FuzzClaimPath(f *testing.F) {
	for _, s := range [][2]string{
		{"scp", `{"scp":"a b"}`},
		{"realm_access.roles", `{"realm_access":{"roles":["a","b"]}}`},
		{"/resource_access/my.app/roles", `{"resource_access":{"my.app":{"roles":["x"]}}}`},
		{"/https:~1~1ex.com~1r", `{"https://ex.com/r":["a"]}`},
		{"a.b", `{"a":"s"}`},
		{"a.b", `{"a":null}`},
		{"a", `{"a":{"b":1,"b":2}}`},
		{"tid", `{"tid":7}`},
		{"x.y.z", `{"x":{"y":{"z":[1,"a"]}}}`},
		{"/a~0", `{"a~":true}`},
	} {
		f.Add(s[0], s[1])
	}
	type claims struct {
		Claims  `json:",inline"`
		Members Members `json:",unknown"`
	}
	f.Fuzz(func(t *testing.T, path, payload string) {
		p, err := ParseClaimPath(path)
		if err != nil {
			if !errors.Is(err, ErrClaimPath) {
				t.Fatalf("error %v does not match ErrClaimPath", err)
			}
			return
		}
		if p.String() != path || len(p.Names()) == 0 || len(p.Names()) > MaxClaimPathDepth {
			t.Fatalf("parsed %q as %q %v", path, p.String(), p.Names())
		}
		if path[0] != '/' && strings.Join(p.Names(), ".") != path {
			t.Fatalf("dotted %q parsed as %v", path, p.Names())
		}
		var c claims
		if DecodeClaims([]byte(payload), &c) != nil {
			return
		}
		v, ok, err := c.Members.Lookup(p)
		// The reference: the whole payload as Go values.
		var ref map[string]any
		if jsonv2.Unmarshal([]byte(payload), &ref) != nil {
			t.Fatalf("payload decoded by DecodeClaims but not as a map: %q", payload)
		}
		for _, name := range []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti"} {
			delete(ref, name) // decoded by Claims, never members
		}
		var cur any = ref
		refOK, refErr := true, false
		for i, name := range p.Names() {
			m, isObj := cur.(map[string]any)
			if !isObj {
				refOK, refErr = false, cur != nil
				break
			}
			next, present := m[name]
			if !present || next == nil {
				refOK = false
				break
			}
			cur = next
			if i == len(p.Names())-1 {
				break
			}
		}
		if refErr != (err != nil) || (err == nil && refOK != ok) {
			t.Fatalf("Lookup(%q) in %q = %s, %v, %v; reference ok %v, error %v", path, payload, v, ok, err, refOK, refErr)
		}
		if !ok {
			return
		}
		var got any
		if jsonv2.Unmarshal(v, &got) != nil || !reflect.DeepEqual(got, cur) {
			t.Fatalf("Lookup(%q) in %q = %s, reference %v", path, payload, v, cur)
		}
		s, serr := ClaimString(v)
		if rs, isStr := cur.(string); isStr != (serr == nil) || isStr && rs != s {
			t.Fatalf("ClaimString(%s) = %q, %v", v, s, serr)
		}
		l, lerr := ClaimStrings(v)
		if lerr == nil {
			arr, isArr := cur.([]any)
			if !isArr || len(arr) != len(l) {
				t.Fatalf("ClaimStrings(%s) = %q", v, l)
			}
			for i, e := range arr {
				if es, isStr := e.(string); !isStr && e != nil || isStr && es != l[i] {
					t.Fatalf("ClaimStrings(%s) = %q", v, l)
				}
			}
		}
	})
}
