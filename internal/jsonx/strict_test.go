package jsonx

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

type doc struct {
	Issuer string   `json:"issuer"`
	Scopes []string `json:"scopes_supported,omitempty"`
	Flag   bool     `json:"flag,omitempty"`
}

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    doc
		wantErr error
	}{
		{name: "ok", in: `{"issuer":"https://as","scopes_supported":["a"]}`, want: doc{Issuer: "https://as", Scopes: []string{"a"}}},
		{name: "unknown names ignored", in: `{"issuer":"https://as","x":{"y":[1,2]}}`, want: doc{Issuer: "https://as"}},
		{name: "leading whitespace", in: " \n{\"issuer\":\"i\"}", want: doc{Issuer: "i"}},
		{name: "duplicate name", in: `{"issuer":"https://good","issuer":"https://evil"}`, wantErr: ErrSyntax},
		{name: "case differs is a different name", in: `{"ISSUER":"https://evil"}`, want: doc{}},
		{name: "array", in: `[{"issuer":"x"}]`, wantErr: ErrNotObject},
		{name: "null", in: `null`, wantErr: ErrNotObject},
		{name: "empty", in: ``, wantErr: ErrNotObject},
		{name: "trailing garbage", in: `{"issuer":"x"} {}`, wantErr: ErrSyntax},
		{name: "wrong type", in: `{"issuer":5}`, wantErr: ErrSyntax},
		{name: "invalid utf8", in: "{\"issuer\":\"\xff\"}", wantErr: ErrSyntax},
		{name: "truncated", in: `{"issuer":"x"`, wantErr: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got doc
			err := DecodeObject([]byte(tt.in), &got)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && (got.Issuer != tt.want.Issuer || len(got.Scopes) != len(tt.want.Scopes)) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeObjectErrorNeverEchoesInput(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-that-must-not-leak"
	for _, in := range []string{
		`{"issuer":` + secret + `}`,
		`{"issuer":"` + secret + `","issuer":"` + secret + `"}`,
		`{"flag":"` + secret + `"}`,
	} {
		var d doc
		err := DecodeObject([]byte(in), &d)
		if err == nil {
			t.Fatalf("DecodeObject(%q) succeeded", in)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q echoes input", err)
		}
	}
}

func TestDecodeObjectNamesDuplicate(t *testing.T) {
	t.Parallel()
	var d doc
	err := DecodeObject([]byte(`{"issuer":"a","flag":true,"issuer":"b"}`), &d)
	if err == nil || !strings.Contains(err.Error(), "duplicate object name") {
		t.Fatalf("err = %v, want a duplicate object name", err)
	}
}

func FuzzDecodeObject(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as","scopes_supported":["a","b"],"flag":true}`))
	f.Add([]byte(`{"issuer":"a","issuer":"b"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		_ = DecodeObject(data, &d)
	})
}

func TestDecodeObjectStrict(t *testing.T) {
	t.Parallel()
	type rule struct {
		Scopes []string `json:"scopes"`
	}
	type policy struct {
		Default []string        `json:"default"`
		Users   map[string]rule `json:"users"`
	}
	tests := []struct {
		name    string
		in      string
		wantErr error
		wantMsg string
	}{
		{name: "ok", in: `{"default":["a"],"users":{"u":{"scopes":["b"]}}}`},
		{name: "unknown top-level name", in: `{"defualt":["a"]}`, wantErr: ErrSyntax, wantMsg: "unknown name at /defualt"},
		{name: "unknown nested name", in: `{"users":{"u":{"scope":["b"]}}}`, wantErr: ErrSyntax, wantMsg: "unknown name"},
		{name: "duplicate name", in: `{"users":{"u":{"scopes":[]},"u":{"scopes":["x"]}}}`, wantErr: ErrSyntax, wantMsg: "duplicate object name"},
		{name: "case differs is unknown", in: `{"Default":["a"]}`, wantErr: ErrSyntax},
		{name: "array", in: `[]`, wantErr: ErrNotObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var p policy
			err := DecodeObjectStrict([]byte(tt.in), &p)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want it to say %q", err, tt.wantMsg)
			}
		})
	}
}

func TestDecodeArray(t *testing.T) {
	t.Parallel()
	type entry struct {
		Email    string `json:"email"`
		Verified bool   `json:"verified"`
	}
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr error
	}{
		{name: "ok", in: `[{"email":"a@x","verified":true,"visibility":null},{"email":"b@x"}]`, want: 2},
		{name: "empty", in: ` []`, want: 0},
		{name: "object", in: `{"email":"a@x"}`, wantErr: ErrNotArray},
		{name: "null", in: `null`, wantErr: ErrNotArray},
		{name: "duplicate name in element", in: `[{"email":"a@x","email":"b@x"}]`, wantErr: ErrSyntax},
		{name: "case differs is another name", in: `[{"EMAIL":"a@x"}]`, want: 1},
		{name: "trailing garbage", in: `[] []`, wantErr: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []entry
			err := DecodeArray([]byte(tt.in), &got)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && len(got) != tt.want {
				t.Fatalf("got %d entries, want %d", len(got), tt.want)
			}
			if tt.name == "case differs is another name" && got[0].Email != "" {
				t.Fatalf("EMAIL matched email: %+v", got)
			}
		})
	}
}

func FuzzDecodeObjectStrict(f *testing.F) {
	f.Add([]byte(`{"default":["a"],"users":{"u":{"scopes":["b"]}}}`))
	f.Add([]byte(`{"users":{"u":{"scopes":[]},"u":{"scopes":["x"]}}}`))
	f.Add([]byte(`{"Default":["a"]}`))
	type rule struct {
		Scopes []string `json:"scopes"`
	}
	type policy struct {
		Default []string        `json:"default"`
		Users   map[string]rule `json:"users"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p policy
		if err := DecodeObjectStrict(data, &p); err != nil {
			return
		}
		// What the strict decoder accepts, the lenient one accepts too,
		// with the same result.
		var q policy
		if err := DecodeObject(data, &q); err != nil {
			t.Fatalf("strict accepted what DecodeObject refuses: %v", err)
		}
	})
}

func FuzzDecodeArray(f *testing.F) {
	f.Add([]byte(`[{"email":"a@example.com","primary":true,"verified":true}]`))
	f.Add([]byte(`[{"email":"a","email":"b"}]`))
	f.Add([]byte(`{}`))
	type entry struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v []entry
		if err := DecodeArray(data, &v); err == nil && len(bytes.TrimLeft(data, " \t\r\n")) > 0 && bytes.TrimLeft(data, " \t\r\n")[0] != '[' {
			t.Fatalf("DecodeArray accepted a document that is not an array: %q", data)
		}
	})
}

// FuzzDecodeValue: DecodeValue accepts only one valid JSON value without
// duplicate names (RFC 7493), and a valid value decodes to what it
// decodes to inside an object by DecodeObject, so a claim cut out of a
// payload is judged as it was inside it; errors never quote the input.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{`"a b"`, `["a","b"]`, `{"a":1}`, `{"a":1,"a":2}`, `[{"a":1,"a":2}]`, `null`, `1e400`,
		`"\ud800"`, "\"\xff\"", ` "x" `, `"x" "y"`, `{"A":1,"a":2}`, `1,"x":2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		err := DecodeValue(data, &v)
		if err != nil && len(data) > 4 && strings.Contains(err.Error(), string(data)) {
			t.Fatalf("error quotes the input: %v", err)
		}
		if !jsontext.Value(data).IsValid() {
			if err == nil {
				t.Fatalf("accepted %q, which is not one valid JSON value", data)
			}
			return
		}
		var w struct {
			V any `json:"v"`
		}
		werr := DecodeObject(append(append([]byte(`{"v":`), data...), '}'), &w)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(v, w.V) {
			t.Fatalf("DecodeValue(%q) = %v, %v; inside an object: %v, %v", data, v, err, w.V, werr)
		}
	})
}
