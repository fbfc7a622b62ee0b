package proxyheader

import (
	"strings"
	"testing"
)

// TestEveryListedName: every name on the lists is dropped in another
// spelling (lower case, '_' for '-'), and a checked name is kept in its
// canonical one; this guards Drop's shortcut on the first letter when a
// list changes.
func TestEveryListedName(t *testing.T) {
	t.Parallel()
	other := func(n string) string { return strings.ToLower(strings.ReplaceAll(n, "-", "_")) }
	var dropped []string
	for _, p := range identityPrefixes {
		dropped = append(dropped, other(p)+"anything")
	}
	for _, n := range append(identityNames[:], credentialNames[:]...) {
		dropped = append(dropped, n, other(n))
	}
	for _, n := range checkedNames {
		dropped = append(dropped, other(n))
		if (Rule{}).Drop(n) {
			t.Errorf("%s (canonical, checked) dropped", n)
		}
	}
	for _, k := range dropped {
		if !(Rule{}).Drop(k) {
			t.Errorf("%s kept", k)
		}
	}
	if r := NewRule("Upstream-Token"); !r.Drop("upstream_token") || (Rule{}).Drop("upstream_token") {
		t.Error("a set header is dropped by its rule only")
	}
}
