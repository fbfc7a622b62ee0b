package redisreplay_test

import (
	"log"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/resource"
)

// Replicas of a resource server share the DPoP replay store; replicas of
// an authorization server share theirs, under another prefix. The client
// connects lazily.
func ExampleNew() {
	c, err := redisreplay.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	rs := resource.Config{
		Resource: "https://mcp.example.com/mcp",
		DPoP: resource.DPoPConfig{
			Mode: resource.DPoPAllowed,
			VerifierConfig: dpop.VerifierConfig{
				Replay: redisreplay.New(c, "mcpauth:rs:https://mcp.example.com/mcp:"),
			},
		},
	}
	as := authserver.Config{
		Issuer: "https://auth.example.com",
		Replay: redisreplay.New(c, "mcpauth:as:https://auth.example.com:"),
	}
	_, _ = rs, as // resource.New(rs), authserver.New(as)
}

// A DPoP verifier of one's own server, sharing its replay store with the
// other instances.
func ExampleNew_dpop() {
	c, err := redisreplay.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	v, err := dpop.NewVerifier(dpop.VerifierConfig{Replay: redisreplay.New(c, "myservice:dpop:")})
	if err != nil {
		log.Fatal(err)
	}
	_ = v // v.Verify(ctx, proof, req)
}
