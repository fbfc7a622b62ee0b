package resource_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func jsonValue(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return v
}

func httpRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
