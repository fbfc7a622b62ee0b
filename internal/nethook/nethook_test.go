package nethook

import (
	"context"
	"net"
	"testing"

	"github.com/mcpauth/mcpauth/internal/safehttp"
)

type hookAlias = Hook

type config struct {
	Name string
	hookAlias
}

func TestSetOfAndApply(t *testing.T) {
	dial := func(context.Context, string, string) (net.Conn, error) { return nil, nil }
	var c config
	if got := Set(&c, Net{Dial: dial}); got != &c {
		t.Fatal("Set did not return its argument")
	}
	n := Of(&c)
	if n.Dial == nil || n.Resolver != nil {
		t.Fatalf("Of after Set: dial set %v, resolver set %v", n.Dial != nil, n.Resolver != nil)
	}
	var opts safehttp.Options
	n.Apply(&opts)
	if opts.Dial == nil || opts.Resolver != nil {
		t.Fatalf("Apply: dial set %v, resolver set %v", opts.Dial != nil, opts.Resolver != nil)
	}
	lit := config{hookAlias: With(Net{Dial: dial})}
	if Of(&lit).Dial == nil {
		t.Fatal("With did not keep the dial function")
	}
}

func TestZeroNetChangesNothing(t *testing.T) {
	var c config
	opts := safehttp.Options{Dial: func(context.Context, string, string) (net.Conn, error) { return nil, nil }}
	Of(&c).Apply(&opts)
	if opts.Dial == nil || opts.Resolver != nil {
		t.Fatal("a zero Net changed the options")
	}
}
