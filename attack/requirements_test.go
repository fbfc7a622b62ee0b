package attack

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// requirementsDoc is where every requirement ID is defined, relative to the
// module root.
const requirementsDoc = "docs/requirements.md"

var (
	// requirementRef is how an ID is cited anywhere: an upper-case prefix,
	// a hyphen and a number. Requirement numbers have two digits; a cited
	// number of one digit is reported as undefined, so a typo cannot hide.
	requirementRef = regexp.MustCompile(`\b([A-Z]{2,5})-([0-9]{1,2})\b`)
	// requirementRange is a cited range such as "RS-04…RS-07" or
	// "CIMD-01 to CIMD-03", which cites every ID in between as well.
	requirementRange = regexp.MustCompile(`\b([A-Z]{2,5})-([0-9]{1,2})\s*(?:…|\.\.\.?|–|—| to | through )\s*([A-Z]{2,5})-([0-9]{1,2})\b`)
	// requirementRow is one row of the tables in docs/requirements.md:
	// | ID | Level | Rule | Source |
	requirementRow = regexp.MustCompile(`^\|\s*([A-Z]{2,5}-[0-9]{2})\s*\|(.*)\|\s*$`)
)

// notRequirementPrefixes are names of the requirementRef shape that are not
// requirement IDs.
var notRequirementPrefixes = map[string]string{
	"UTF": "character encodings (UTF-8, UTF-16)",
}

// TestRequirementIDs keeps the requirement IDs of the docs and tests
// resolvable: every ID cited in a .go or .md file of the module (code,
// tests, docs, testdata; ranges count for every ID they span) has a row in
// docs/requirements.md, no ID has two rows, and every row gives a level, a
// rule and a source.
func TestRequirementIDs(t *testing.T) {
	t.Parallel()
	defined := requirementDefinitions(t)
	used, files := requirementCitations(t)
	self := filepath.ToSlash(filepath.Join("attack", "requirements_test.go"))
	if !slices.Contains(files, self) {
		t.Fatalf("the walk of the module did not reach %s; it scanned %d files", self, len(files))
	}
	ids := make([]string, 0, len(used))
	for id := range used {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, ok := defined[id]; ok {
			continue
		}
		where := used[id]
		more := ""
		if len(where) > 3 {
			more = fmt.Sprintf(" and %d more", len(where)-3)
			where = where[:3]
		}
		t.Errorf("%s is cited (%s%s) but %s has no row for it; add one, or correct the citation",
			id, strings.Join(where, ", "), more, requirementsDoc)
	}
}

// requirementDefinitions parses docs/requirements.md and returns the line
// of each defined ID. Duplicate and incomplete rows are errors.
func requirementDefinitions(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot, filepath.FromSlash(requirementsDoc)))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		m := requirementRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		id := m[1]
		if first, dup := defined[id]; dup {
			t.Errorf("%s:%d defines %s again (first at line %d)", requirementsDoc, n, id, first)
			continue
		}
		defined[id] = n
		cells := strings.Split(m[2], "|")
		if len(cells) != 3 {
			t.Errorf("%s:%d: the row of %s has %d cells after the ID, want 3 (level, rule, source)", requirementsDoc, n, id, len(cells))
			continue
		}
		for i, name := range []string{"level", "rule", "source"} {
			if strings.TrimSpace(cells[i]) == "" {
				t.Errorf("%s:%d: the row of %s has no %s", requirementsDoc, n, id, name)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(defined) == 0 {
		t.Fatalf("%s defines no requirement; rows look like | RS-01 | MUST | rule | source |", requirementsDoc)
	}
	return defined
}

// requirementCitations walks the module and returns, for each cited ID,
// where it is cited ("path:line"), and the files scanned (slash-separated,
// relative to the module root). Hidden directories (.git, result folders)
// and installed dependencies (node_modules, vendor) are not the module's
// own text and are skipped.
func requirementCitations(t *testing.T) (map[string][]string, []string) {
	t.Helper()
	used := map[string][]string{}
	var files []string
	err := filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != moduleRoot && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
			return nil
		}
		rel, err := filepath.Rel(moduleRoot, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, rel)
		for n, line := range strings.Split(string(data), "\n") {
			for _, id := range citedIDs(line) {
				used[id] = append(used[id], rel+":"+strconv.Itoa(n+1))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used, files
}

// citedIDs returns the requirement IDs one line cites, each once, with
// the IDs inside a cited range included.
func citedIDs(line string) []string {
	var ids []string
	for _, m := range requirementRef.FindAllStringSubmatch(line, -1) {
		if _, not := notRequirementPrefixes[m[1]]; !not {
			ids = append(ids, m[0])
		}
	}
	for _, m := range requirementRange.FindAllStringSubmatch(line, -1) {
		lo, _ := strconv.Atoi(m[2])
		hi, _ := strconv.Atoi(m[4])
		if m[1] != m[3] || lo >= hi {
			continue
		}
		if _, not := notRequirementPrefixes[m[1]]; not {
			continue
		}
		for i := lo + 1; i < hi; i++ {
			ids = append(ids, fmt.Sprintf("%s-%02d", m[1], i))
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// TestCitedIDs checks the citation scanner itself. IDs that must not be
// defined are spelled in pieces ("AB-"+"7"), so that this file, which the
// scan also reads, cites none of them.
func TestCitedIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want []string
	}{
		{"requirement RS-08 and CL-13", []string{"CL-13", "RS-08"}},
		{"(RS-04…RS-07, RS-12)", []string{"RS-04", "RS-05", "RS-06", "RS-07", "RS-12"}},
		{"CIMD-01 to CIMD-03", []string{"CIMD-01", "CIMD-02", "CIMD-03"}},
		{"RS-04..RS-06", []string{"RS-04", "RS-05", "RS-06"}},
		{"CL-05 to RS-07 is no range", []string{"CL-05", "RS-07"}},
		{"AS-09 CIMD-09 other client", []string{"AS-09", "CIMD-09"}},
		{"a one-digit typo: AB-" + "7", []string{"AB-" + "7"}},
		{"a new prefix: XYZ-" + "01", []string{"XYZ-" + "01"}},
		{"SHA-256, UTF-8, UTF-16, RFC 9728 §3.1, P-256, SEP-2243, 2026-07-28", nil},
		{"TestCL25CIMDPrivateKeyJWT, RS256, x-RS-99y", nil},
		{"RS-08 RS-08", []string{"RS-08"}},
	}
	for _, tt := range tests {
		if got := citedIDs(tt.line); !slices.Equal(got, tt.want) {
			t.Errorf("citedIDs(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
