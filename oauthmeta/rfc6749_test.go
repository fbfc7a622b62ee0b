package oauthmeta

import (
	"errors"
	"reflect"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
)

func TestParseError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    *Error
		wantErr error
	}{
		{in: `{"error":"invalid_grant","error_description":"code expired"}`, want: &Error{Code: CodeInvalidGrant, Description: "code expired"}},
		{in: `{"error":"invalid_client","error_uri":"https://as/doc"}`, want: &Error{Code: CodeInvalidClient, URI: "https://as/doc"}},
		{in: `{"error_description":"x"}`, wantErr: ErrMissingField},
		{in: `{"error":"a\"b"}`, wantErr: ErrMalformed},
		{in: `{"error":"two words"}`, wantErr: ErrMalformed},
		{in: `{"error":"a\\b"}`, wantErr: ErrMalformed},
		{in: `{"error":"a\tb"}`, wantErr: ErrMalformed},
		{in: `{"error":"a\u007fb"}`, wantErr: ErrMalformed},
		{in: `{"error":"caf\u00e9"}`, wantErr: ErrMalformed},
		{in: `{"error":"x!#[]~_"}`, want: &Error{Code: "x!#[]~_"}},
		{in: `<html>`, wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseError([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestErrorIs(t *testing.T) {
	t.Parallel()
	err := error(&Error{Code: CodeInvalidGrant, Description: "replayed"})
	if !errors.Is(err, &Error{Code: CodeInvalidGrant}) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(err, &Error{Code: CodeInvalidClient}) {
		t.Error("errors.Is matched another code")
	}
	golden.JSON(t, "error_invalid_grant.json", err)
}

func TestParseScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr error
	}{
		{in: "", want: nil},
		{in: "a", want: []string{"a"}},
		{in: "files:read  files:write files:read", want: []string{"files:read", "files:write"}},
		{in: `a"b`, wantErr: ErrInvalidScope},
		{in: `a\b`, wantErr: ErrInvalidScope},
		{in: "a\tb", wantErr: ErrInvalidScope},
		{in: "é", wantErr: ErrInvalidScope},
	}
	for _, tt := range tests {
		got, err := ParseScope(tt.in)
		if !errors.Is(err, tt.wantErr) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseScope(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if got := FormatScope([]string{"a", "b"}); got != "a b" {
		t.Errorf("FormatScope = %q", got)
	}
}

func TestParseTokenResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{name: "ok", in: `{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"}`},
		{name: "no token_type", in: `{"access_token":"at"}`, wantErr: ErrMissingField},
		{name: "no access_token", in: `{"token_type":"Bearer"}`, wantErr: ErrMissingField},
		{name: "negative expiry", in: `{"access_token":"at","token_type":"Bearer","expires_in":-1}`, wantErr: ErrMalformed},
		{name: "expires_in as string", in: `{"access_token":"at","token_type":"Bearer","expires_in":"3600"}`, wantErr: ErrMalformed},
		{name: "duplicate access_token", in: `{"access_token":"a","access_token":"b","token_type":"Bearer"}`, wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTokenResponse([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestIntrospectionAndRegistration(t *testing.T) {
	t.Parallel()
	r, err := ParseIntrospectionResponse([]byte(`{"active":true,"aud":"https://h/mcp","scope":"a","cnf":{"jkt":"x"}}`))
	if err != nil || !r.Active || !r.Aud.Contains("https://h/mcp") || r.Cnf.JKT != "x" {
		t.Fatalf("got %+v, %v", r, err)
	}
	r, err = ParseIntrospectionResponse([]byte(`{"active":true,"aud":["a","b"]}`))
	if err != nil || len(r.Aud) != 2 {
		t.Fatalf("got %+v, %v", r, err)
	}
	if _, err := ParseIntrospectionResponse([]byte(`{"active":true,"aud":5}`)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("numeric aud: err = %v", err)
	}
	golden.JSON(t, "introspection_active.json", IntrospectionResponse{Active: true, Scope: "mcp:tools", ClientID: "c", Sub: "alice", Aud: Audience{"https://h/mcp"}, Iss: "https://as", Exp: 1700000000})
	ci, err := ParseClientInformation([]byte(`{"client_id":"abc","redirect_uris":["http://127.0.0.1/cb"],"application_type":"native","jwks":{"keys":[]}}`))
	if err != nil || ci.ClientID != "abc" || ci.ApplicationType != "native" || string(ci.JWKS) != `{"keys":[]}` {
		t.Fatalf("got %+v, %v", ci, err)
	}
	if _, err := ParseClientInformation([]byte(`{"redirect_uris":[]}`)); !errors.Is(err, ErrMissingField) {
		t.Fatalf("missing client_id: err = %v", err)
	}
	golden.JSON(t, "client_information.json", ci)
}

// TestAudienceDecoders: the go-json-experiment decoder (DecodeJSON,
// UnmarshalJSONFrom) and encoding/json (UnmarshalJSON) agree on "aud".
func TestAudienceDecoders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Audience
		ok   bool
	}{
		{in: `null`, want: nil, ok: true},
		{in: `"https://h/mcp"`, want: Audience{"https://h/mcp"}, ok: true},
		{in: `[]`, want: Audience{}, ok: true},
		{in: `["a","b"]`, want: Audience{"a", "b"}, ok: true},
		{in: `5`},
		{in: `true`},
		{in: `{"a":"b"}`},
		{in: `["a",5]`},
		{in: `[{"a":1}]`},
		{in: "\"\xff\""},
		{in: `["a"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var v2 struct {
				Aud Audience `json:"aud"`
			}
			err := DecodeJSON([]byte(`{"aud":`+tt.in+`}`), &v2)
			if (err == nil) != tt.ok || (tt.ok && !reflect.DeepEqual(v2.Aud, tt.want)) {
				t.Fatalf("DecodeJSON: got %#v, %v; want %#v, ok %v", v2.Aud, err, tt.want, tt.ok)
			}
			var v1 Audience
			err = v1.UnmarshalJSON([]byte(tt.in))
			if (err == nil) != tt.ok || (tt.ok && !reflect.DeepEqual(v1, tt.want)) {
				t.Fatalf("UnmarshalJSON: got %#v, %v; want %#v, ok %v", v1, err, tt.want, tt.ok)
			}
		})
	}
}

// TestAudienceReusesStorage: a single audience is decoded into the
// storage the value already has, as go-json-experiment does for slices;
// a value without storage gets its own.
func TestAudienceReusesStorage(t *testing.T) {
	t.Parallel()
	var buf [1]string
	v := struct {
		Aud Audience `json:"aud"`
	}{Aud: buf[:0:1]}
	if err := DecodeJSON([]byte(`{"aud":"https://h/mcp"}`), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Aud) != 1 || &v.Aud[0] != &buf[0] || buf[0] != "https://h/mcp" {
		t.Fatalf("got %#v, buf %q", v.Aud, buf)
	}
	var w struct {
		Aud Audience `json:"aud"`
	}
	if err := DecodeJSON([]byte(`{"aud":"x"}`), &w); err != nil || !reflect.DeepEqual(w.Aud, Audience{"x"}) {
		t.Fatalf("got %#v, %v", w.Aud, err)
	}
}
