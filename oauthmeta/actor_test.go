package oauthmeta_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

func TestParseActor(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"sub":"a","act":`, oauthmeta.MaxActorDepth) + `{"sub":"z"}` + strings.Repeat(`}`, oauthmeta.MaxActorDepth)
	limit := strings.Repeat(`{"sub":"a","act":`, oauthmeta.MaxActorDepth-1) + `{"sub":"z"}` + strings.Repeat(`}`, oauthmeta.MaxActorDepth-1)
	for _, tt := range []struct {
		name, in string
		depth    int // 0: refused
		chain    string
	}{
		{"RFC8693 §4.1 one actor", `{"sub":"planner"}`, 1, "planner"},
		{"RFC8693 §4.1 nested, current outermost", `{"sub":"tool","iss":"https://k8s","act":{"sub":"planner"}}`, 2, "https://k8s|tool > planner"},
		{"other members ignored", `{"sub":"a","client_id":"x"}`, 1, "a"},
		{"at the depth limit", limit, oauthmeta.MaxActorDepth, ""},
		{"over the depth limit", deep, 0, ""},
		{"deeply nested arrays", `{"sub":"a","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, 0, ""},
		{"no sub", `{"iss":"x"}`, 0, ""},
		{"nested without sub", `{"sub":"a","act":{}}`, 0, ""},
		{"sub not a string", `{"sub":1}`, 0, ""},
		{"duplicate sub", `{"sub":"a","sub":"b"}`, 0, ""},
		{"not an object", `"a"`, 0, ""},
		{"act not an object", `{"sub":"a","act":"b"}`, 0, ""},
		{"sub too long", `{"sub":"` + strings.Repeat("s", 513) + `"}`, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := oauthmeta.ParseActor([]byte(tt.in))
			if tt.depth == 0 {
				if !errors.Is(err, oauthmeta.ErrActor) {
					t.Fatalf("err = %v, want ErrActor", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Depth() != tt.depth || len(a.Chain()) != tt.depth {
				t.Errorf("depth %d, chain %d, want %d", a.Depth(), len(a.Chain()), tt.depth)
			}
			if tt.chain != "" && a.String() != tt.chain {
				t.Errorf("String = %q, want %q", a.String(), tt.chain)
			}
		})
	}
}

func TestActorMatches(t *testing.T) {
	t.Parallel()
	x := &oauthmeta.Actor{Subject: "tool", Issuer: "https://k8s"}
	for _, tt := range []struct {
		may  *oauthmeta.Actor
		want bool
	}{
		{&oauthmeta.Actor{Subject: "tool"}, true},
		{&oauthmeta.Actor{Subject: "tool", Issuer: "https://k8s"}, true},
		{&oauthmeta.Actor{Subject: "tool", Issuer: "https://other"}, false},
		{&oauthmeta.Actor{Subject: "planner"}, false},
		{nil, false},
	} {
		if got := tt.may.Matches(x); got != tt.want {
			t.Errorf("%+v.Matches = %v", tt.may, got)
		}
	}
	var none *oauthmeta.Actor
	if none.Depth() != 0 || none.Chain() != nil || none.Validate() != nil {
		t.Error("nil chain")
	}
}

func FuzzParseActor(f *testing.F) {
	f.Add([]byte(`{"sub":"tool","act":{"sub":"planner"}}`))
	f.Add([]byte(`{"sub":"a","act":{"sub":"b","act":{"sub":"c"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := oauthmeta.ParseActor(data)
		if err != nil {
			return
		}
		if a.Depth() < 1 || a.Depth() > oauthmeta.MaxActorDepth || a.Validate() != nil {
			t.Fatalf("accepted an invalid chain of depth %d", a.Depth())
		}
	})
}

// A resource server reads the delegation chain of a token: the current
// actor first.
func ExampleParseActor() {
	a, err := oauthmeta.ParseActor([]byte(`{"sub":"tool-agent","act":{"sub":"planner-agent"}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Depth(), a.Chain()[0].Subject, "|", a)
	// Output: 2 tool-agent | tool-agent > planner-agent
}
