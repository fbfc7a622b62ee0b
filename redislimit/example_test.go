package redislimit_test

import (
	"log"

	"github.com/mcpauth/mcpauth/redislimit"
	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/resource"
)

// Replicas of one MCP server share each identity's budget on Redis. The
// client connects lazily.
func ExampleNew() {
	c, err := redisreplay.NewClient("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	cfg := resource.Config{
		Resource: "https://mcp.example.com/mcp",
		RateLimit: &resource.RateLimit{
			Identity: resource.Rate{PerSecond: 5, Burst: 20},
			Tools:    map[string]resource.Rate{"search": {PerSecond: 0.5, Burst: 5}},
			Store:    redislimit.New(c, "mcpauth:rl:https://mcp.example.com/mcp:"),
		},
	}
	_ = cfg // resource.New(cfg)
}
