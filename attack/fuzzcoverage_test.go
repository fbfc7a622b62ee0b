package attack

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// notFuzzed lists parsers and verifiers without a fuzz target of their
// own, each with the reason.
func notFuzzed() map[string]string {
	return map[string]string{
		// Resolve fetches over the network; the hostile input it parses goes
		// through ValidateClientID and ParseDocument, both fuzzed
		// (clientmeta/fuzz_test.go), and its fetch rules are attacked by
		// TestCIMDAttacksAS.
		"clientmeta.Resolve": "network; its parsers are fuzzed",
	}
}

// TestFuzzCoverage: every exported parser and verifier of the library
// packages and of the commands' internal packages (functions and methods
// named Parse…, Verify…, Decode…, Validate, CheckURL) is called from some
// fuzz target in the module, or is listed in notFuzzed with a reason. A new
// parser without a fuzz target fails here.
func TestFuzzCoverage(t *testing.T) {
	t.Parallel()
	called := map[string]bool{}
	type fn struct{ pkg, name string }
	var parsers []fn
	err := filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			// internal/oauthtest holds test fixtures (token minting and
			// decoding for tests), not parsers of other parties' input.
			if p != moduleRoot && (n == "testdata" || n == "tools" || n == "examples" || n == "vendor" ||
				n == "node_modules" || n == "oauthtest" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || commandMain(p) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(moduleRoot, filepath.Dir(p))
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if strings.HasSuffix(p, "_test.go") {
				if strings.HasPrefix(fd.Name.Name, "Fuzz") {
					ast.Inspect(fd, func(n ast.Node) bool {
						switch x := n.(type) {
						case *ast.SelectorExpr:
							called[x.Sel.Name] = true
						case *ast.Ident:
							called[x.Name] = true
						}
						return true
					})
				}
				continue
			}
			if isParser(fd.Name) {
				parsers = append(parsers, fn{filepath.Base(rel), fd.Name.Name})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(parsers) < 15 {
		t.Fatalf("only %d parsers found", len(parsers))
	}
	skip := notFuzzed()
	for _, p := range parsers {
		if !called[p.name] && skip[p.pkg+"."+p.name] == "" {
			t.Errorf("%s.%s has no fuzz target (add one next to it, or in attack/fuzz_test.go)", p.pkg, p.name)
		}
	}
}

func isParser(id *ast.Ident) bool {
	if !id.IsExported() {
		return false
	}
	n := id.Name
	return strings.HasPrefix(n, "Parse") || strings.HasPrefix(n, "Verify") || strings.HasPrefix(n, "Decode") ||
		n == "Validate" || n == "CheckURL" || n == "Resolve"
}
