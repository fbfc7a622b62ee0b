package jsonx

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

type doc struct {
	Issuer string   `json:"issuer"`
	Scopes []string `json:"scopes_supported,omitempty"`
	Flag   bool     `json:"flag,omitempty"`
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
		{name: "unknown top-level name", in: `{"defualt":["a"]}`, wantErr: oauthmeta.ErrMalformed, wantMsg: "unknown name at /defualt"},
		{name: "unknown nested name", in: `{"users":{"u":{"scope":["b"]}}}`, wantErr: oauthmeta.ErrMalformed, wantMsg: "unknown name"},
		{name: "duplicate name", in: `{"users":{"u":{"scopes":[]},"u":{"scopes":["x"]}}}`, wantErr: oauthmeta.ErrMalformed, wantMsg: "duplicate object name"},
		{name: "case differs is unknown", in: `{"Default":["a"]}`, wantErr: oauthmeta.ErrMalformed},
		{name: "array", in: `[]`, wantErr: oauthmeta.ErrMalformed, wantMsg: "not a JSON object"},
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
		wantMsg string
	}{
		{name: "ok", in: `[{"email":"a@x","verified":true,"visibility":null},{"email":"b@x"}]`, want: 2},
		{name: "empty", in: ` []`, want: 0},
		{name: "object", in: `{"email":"a@x"}`, wantErr: oauthmeta.ErrMalformed, wantMsg: "not a JSON array"},
		{name: "null", in: `null`, wantErr: oauthmeta.ErrMalformed, wantMsg: "not a JSON array"},
		{name: "duplicate name in element", in: `[{"email":"a@x","email":"b@x"}]`, wantErr: oauthmeta.ErrMalformed},
		{name: "case differs is another name", in: `[{"EMAIL":"a@x"}]`, want: 1},
		{name: "trailing garbage", in: `[] []`, wantErr: oauthmeta.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []entry
			err := DecodeArray([]byte(tt.in), &got)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want it to say %q", err, tt.wantMsg)
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
