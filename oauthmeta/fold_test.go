package oauthmeta

import "testing"

func TestEqualFold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"Bearer", "bearer", true},
		{"LOCALHOST", "localhost", true},
		{"", "", true},
		{"Bearer", "Bearer ", false},
		{"Beaʀer", "bearer", false},
		{"baſic", "basic", false},  // U+017F folds to s in Unicode
		{"\u212Aey", "key", false}, // the Kelvin sign folds to k
		{"ſs", "sſ", false},        // same length in bytes, both non-ASCII
		{"localhoſt", "localhost", false},
	} {
		if got := equalFold(tc.a, tc.b); got != tc.want {
			t.Errorf("equalFold(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
