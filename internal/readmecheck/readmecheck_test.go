package readmecheck

import (
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name    string
		md      string
		want    []Block
		wantErr bool
	}{
		{name: "none", md: "# t\n\n```sh\nmake\n```\n"},
		{name: "one", md: "a\n```go\nx := 1\n```\n", want: []Block{{Line: 3, Code: "x := 1"}}},
		{name: "info string", md: "```go title\nx\n```", want: []Block{{Line: 2, Code: "x"}}},
		{name: "skipped", md: SkipMarker + "\n```go\nbroken(\n```\n```go\nok()\n```\n", want: []Block{{Line: 6, Code: "ok()"}}},
		{name: "longer fence", md: "````go\n```go\n````\n", want: []Block{{Line: 2, Code: "```go"}}},
		{name: "go inside another block", md: "```md\n```go\n```\n", want: nil},
		{name: "indented code is not a fence", md: "    ```go\n    x\n", want: nil},
		{name: "unterminated", md: "```go\nx\n", wantErr: true},
		{name: "not go", md: "```golang-ish\nx\n```\n```json\n{}\n```\n", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.md)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("block %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name    string
		code    string
		want    []string // substrings of blocks.go
		notWant []string
		file    bool
		wantErr bool
	}{
		{name: "statements", code: "c, err := client.New(client.Config{})\nh, _ := c.OAuthHandler(u)",
			want: []string{`client "github.com/mcpauth/mcpauth/client"`, "//line README.md:7:1\nc, err :=", "_ = c\n", "_ = err\n", "_ = h\n"}},
		{name: "expression", code: "authserver.Client{ID: \"svc\"}",
			want: []string{"_ = authserver.Client{", `authserver "github.com/mcpauth/mcpauth/authserver"`}},
		{name: "only referenced imports", code: "x := time.Second", want: []string{`time "time"`}, notWant: []string{"net/http", "mcpauth"}},
		{name: "local shadows a package name", code: "client := 1\n_ = client.X", notWant: []string{"mcpauth/client"}},
		{name: "call without a value", code: "mcp.AddTool(server, tool, handler)", want: []string{"\nmcp.AddTool(server"}, notWant: []string{"_ = mcp.AddTool"}},
		{name: "var declaration", code: "var n int", want: []string{"_ = n\n"}},
		{name: "complete file", code: "package main\n\nfunc main() {}", file: true},
		{name: "not Go", code: "this is not Go", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := Generate("p", "README.md", []Block{{Line: 7, Code: tt.code}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "README.md:7") {
					t.Errorf("error %q does not name the line", err)
				}
				return
			}
			if tt.file {
				if got := string(files["file0.go"]); got != "//line README.md:7:1\n"+tt.code+"\n" {
					t.Errorf("file0.go = %q", got)
				}
				return
			}
			got := string(files["blocks.go"])
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("blocks.go lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("blocks.go has %q:\n%s", w, got)
				}
			}
		})
	}
}
