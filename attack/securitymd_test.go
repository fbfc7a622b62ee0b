package attack

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// moduleRoot is where go.mod and SECURITY.md live, relative to this
// package's directory (the working directory of its tests).
const moduleRoot = ".."

var (
	testRef = regexp.MustCompile("`([A-Za-z0-9_./-]+_test\\.go):((?:Test|Fuzz|Example|Benchmark)[A-Za-z0-9_]*)`")
	fileRef = regexp.MustCompile("`([A-Za-z0-9_./-]+\\.go)`")
)

// TestSecurityDocument keeps SECURITY.md honest: every test it cites exists
// in the file it names, every source file it cites exists, every row of
// the attack table cites at least one test, every attack class of the
// requirement checklist (§7) has a row, and every exported Insecure…
// switch in the library packages is listed.
func TestSecurityDocument(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(moduleRoot, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	refs := testRef.FindAllStringSubmatch(doc, -1)
	if len(refs) < 40 {
		t.Fatalf("only %d test references found; the reference syntax is `path/x_test.go:TestName`", len(refs))
	}
	for _, m := range refs {
		src, err := os.ReadFile(filepath.Join(moduleRoot, m[1]))
		if err != nil {
			t.Errorf("SECURITY.md cites %s:%s, but the file cannot be read: %v", m[1], m[2], err)
			continue
		}
		if !regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(m[2]) + `\(`).Match(src) {
			t.Errorf("SECURITY.md cites %s, which is not defined in %s", m[2], m[1])
		}
	}
	for _, m := range fileRef.FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join(moduleRoot, m[1])); err != nil {
			t.Errorf("SECURITY.md cites %s, which does not exist", m[1])
		}
	}
	checkAttackTable(t, doc)
	for _, name := range insecureSwitches(t) {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("%s is not listed in SECURITY.md's Insecure… table", name)
		}
	}
}

// checkAttackTable checks the rows of the attack table.
func checkAttackTable(t *testing.T, doc string) {
	t.Helper()
	_, section, ok := strings.Cut(doc, "## Attack classes")
	if !ok {
		t.Fatal("SECURITY.md has no \"## Attack classes\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| **") {
			rows = append(rows, line)
		}
	}
	for _, row := range rows {
		if !testRef.MatchString(row) {
			t.Errorf("attack row without a test: %s", clip(row, 80))
		}
	}
	// The attack classes of the requirement checklist, §7.
	for _, class := range []string{"Mix-up", "Token passthrough", "Audience confusion", "Code injection", "PKCE downgrade",
		"SSRF", "Metadata impersonation", "Open redirect", "Algorithm confusion", "Localhost redirect impersonation",
		"Scheme injection", "DNS rebinding", "Header/body spoofing", "State handle hijacking", "Refresh token replay", "CSRF"} {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "| **"+class) }) {
			t.Errorf("no attack row for %q", class)
		}
	}
}

// insecureSwitches lists the exported identifiers starting with Insecure in
// the library packages and in the commands' internal packages (the main
// packages under cmd/ and examples/ excluded), as
// "pkgpath.Type.Field" for struct fields and "pkgpath.Name" otherwise, where
// pkgpath is the package directory relative to the module root.
func insecureSwitches(t *testing.T) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch n := d.Name(); {
			case p == moduleRoot:
			case n == "testdata" || n == "tools" || n == "examples" || n == "vendor" || n == "node_modules" ||
				strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || commandMain(p) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // a file another change left half-written is not this test's business
		}
		rel, _ := filepath.Rel(moduleRoot, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		for _, decl := range f.Decls {
			names = append(names, insecureIn(rel, decl)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func insecureIn(pkg string, decl ast.Decl) []string {
	var out []string
	is := func(id *ast.Ident) bool { return id.IsExported() && strings.HasPrefix(id.Name, "Insecure") }
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil && is(d.Name) {
			out = append(out, pkg+"."+d.Name.Name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if is(n) {
						out = append(out, pkg+"."+n.Name)
					}
				}
			case *ast.TypeSpec:
				if is(s.Name) {
					out = append(out, pkg+"."+s.Name.Name)
				}
				st, ok := s.Type.(*ast.StructType)
				if !ok || !s.Name.IsExported() {
					continue
				}
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						if is(n) {
							out = append(out, pkg+"."+s.Name.Name+"."+n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// commandMain reports whether the file at p (under moduleRoot) belongs to a
// command's own package under cmd/ rather than to a package in a
// cmd/…/internal/ tree, whose parsers and switches are checked like the
// library's.
func commandMain(p string) bool {
	rel, err := filepath.Rel(moduleRoot, filepath.Dir(p))
	if err != nil {
		return false
	}
	rel = filepath.ToSlash(rel)
	return (rel == "cmd" || strings.HasPrefix(rel, "cmd/")) && !strings.Contains(rel+"/", "/internal/")
}
