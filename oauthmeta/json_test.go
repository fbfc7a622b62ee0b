package oauthmeta

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type jsonDoc struct {
	Issuer string   `json:"issuer"`
	Scopes []string `json:"scopes_supported,omitempty"`
	Flag   bool     `json:"flag,omitempty"`
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    jsonDoc
		wantMsg string // "" when decoding succeeds
	}{
		{name: "ok", in: `{"issuer":"https://as","scopes_supported":["a"]}`, want: jsonDoc{Issuer: "https://as", Scopes: []string{"a"}}},
		{name: "unknown names ignored", in: `{"issuer":"https://as","x":{"y":[1,2]}}`, want: jsonDoc{Issuer: "https://as"}},
		{name: "leading whitespace", in: " \n{\"issuer\":\"i\"}", want: jsonDoc{Issuer: "i"}},
		{name: "duplicate name", in: `{"issuer":"https://good","issuer":"https://evil"}`, wantMsg: "duplicate object name"},
		{name: "duplicate name nested", in: `{"x":{"y":1,"y":2}}`, wantMsg: "duplicate object name"},
		{name: "case differs is a different name", in: `{"ISSUER":"https://evil"}`, want: jsonDoc{}},
		{name: "array", in: `[{"issuer":"x"}]`, wantMsg: "not a JSON object"},
		{name: "null", in: `null`, wantMsg: "not a JSON object"},
		{name: "empty", in: ``, wantMsg: "not a JSON object"},
		{name: "trailing garbage", in: `{"issuer":"x"} {}`, wantMsg: "invalid JSON"},
		{name: "wrong type", in: `{"issuer":5}`, wantMsg: "unexpected value at /issuer"},
		{name: "invalid utf8", in: "{\"issuer\":\"\xff\"}", wantMsg: "invalid JSON"},
		{name: "truncated", in: `{"issuer":"x"`, wantMsg: "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got jsonDoc
			err := DecodeJSON([]byte(tt.in), &got)
			if tt.wantMsg != "" {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %v, want ErrMalformed saying %q", err, tt.wantMsg)
				}
				return
			}
			if err != nil || got.Issuer != tt.want.Issuer || len(got.Scopes) != len(tt.want.Scopes) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestDecodeJSONArray: a pointer to a slice asks for a top-level array,
// decoded by the same rules.
func TestDecodeJSONArray(t *testing.T) {
	t.Parallel()
	var list []jsonDoc
	if err := DecodeJSON([]byte(`[{"issuer":"a"},{"issuer":"b"}]`), &list); err != nil || len(list) != 2 || list[1].Issuer != "b" {
		t.Fatalf("got %+v, %v", list, err)
	}
	for in, want := range map[string]string{
		`{"issuer":"a"}`:                "not a JSON array",
		`null`:                          "not a JSON array",
		`[{"issuer":"a","issuer":"b"}]`: "duplicate object name",
	} {
		if err := DecodeJSON([]byte(in), &list); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeJSON(%s) = %v, want ErrMalformed saying %q", in, err, want)
		}
	}
}

func TestDecodeJSONErrorNeverEchoesInput(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-that-must-not-leak"
	for _, in := range []string{
		`{"issuer":` + secret + `}`,
		`{"issuer":"` + secret + `","issuer":"` + secret + `"}`,
		`{"flag":"` + secret + `"}`,
		`{"` + secret + `":1,"` + secret + `":2}`,
	} {
		var d jsonDoc
		err := DecodeJSON([]byte(in), &d)
		if err == nil {
			t.Fatalf("DecodeJSON(%q) succeeded", in)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q echoes input", err)
		}
	}
}

// TestDecodeJSONPointerBounded: the location in an error is cut, so a long
// attacker-chosen name cannot fill a log line.
func TestDecodeJSONPointerBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 500)
	var v map[string]map[string]int
	err := DecodeJSON([]byte(`{"`+long+`":{"x":"y"}}`), &v)
	if !errors.Is(err, ErrMalformed) || len(err.Error()) > 200 || !strings.Contains(err.Error(), "unexpected value at /nnn") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzDecodeJSON: never a panic; an accepted document was an object, and
// decoding it again gives the same result.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as","scopes_supported":["a","b"],"flag":true}`))
	f.Add([]byte(`{"issuer":"a","issuer":"b"}`))
	f.Add([]byte(`{"issuer":"a","ISSUER":"b"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d jsonDoc
		if err := DecodeJSON(data, &d); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
			t.Fatalf("accepted a document that is not an object: %q", data)
		}
		var again jsonDoc
		if err := DecodeJSON(data, &again); err != nil || again.Issuer != d.Issuer || again.Flag != d.Flag || len(again.Scopes) != len(d.Scopes) {
			t.Fatalf("second decode differs: %+v, %v", again, err)
		}
	})
}
