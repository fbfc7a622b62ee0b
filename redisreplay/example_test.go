package redisreplay_test

import (
	"log"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/resource"
)

// Replicas of a resource server share the DPoP replay store; replicas of
// an authorization server share theirs. The client connects lazily.
func ExampleForResource() {
	c, err := redisreplay.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	cfg := resource.Config{
		Resource: "https://mcp.example.com/mcp",
		DPoP: resource.DPoPConfig{
			Mode:   resource.DPoPAllowed,
			Replay: redisreplay.ForResource(c, "mcpauth:rs:https://mcp.example.com/mcp:"),
		},
	}
	_ = cfg // resource.New(cfg)
}

func ExampleForAuthServer() {
	c, err := redisreplay.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	cfg := authserver.Config{
		Issuer: "https://auth.example.com",
		Replay: redisreplay.ForAuthServer(c, "mcpauth:as:https://auth.example.com:"),
	}
	_ = cfg // authserver.New(cfg)
}
