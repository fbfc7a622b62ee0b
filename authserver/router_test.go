package authserver

import (
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// TestRoutesHaveNoVariables: the server dispatches to the handler of the
// route gorilla/mux matches without the request copies that carry route
// variables (see matched), so a route with a variable would reach its
// handler with mux.Vars empty. Every route of a server with the optional
// endpoints on is a fixed path.
func TestRoutesHaveNoVariables(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "/tenant", func(c *Config) {
		c.Admin = &AdminConfig{Token: strings.Repeat("a", 43)}
		c.Device = &DeviceConfig{}
	})
	n := 0
	err := h.as.router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			t.Errorf("route without a path: %v", err)
			return nil
		}
		n++
		if strings.ContainsAny(tpl, "{}") {
			t.Errorf("route %q has a variable", tpl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("walked %d routes, want every endpoint", n)
	}
}
