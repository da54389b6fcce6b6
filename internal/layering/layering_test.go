package layering

import (
	"bufio"
	"fmt"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/coorflow/coorflow"

// A rule is one row of the import table: the packages it names and the
// packages of ours they may import.
type rule struct {
	line     int      // in docs/architecture.md
	pkgs     []string // patterns: a path, or x/* for every package under x
	allow    []string // patterns
	anything bool
}

// An edge is one import of ours by a package's own (non-test) file.
type edge struct {
	from, to string // module-relative paths
	pos      string // file:line of the import
}

// TestImportsFollowTheTable checks every import of ours in every package
// of the module against docs/architecture.md's table, in every build
// configuration (build tags are ignored: a file behind a tag still counts).
func TestImportsFollowTheTable(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	rules, err := parseTable(string(doc))
	require.NoError(t, err)
	require.NotEmpty(t, rules, "layering: no import table in docs/architecture.md")
	pkgs, edges := scan(t, root)
	require.Contains(t, pkgs, "graph", "layering: the scan found no packages")
	for _, problem := range check(rules, pkgs, edges) {
		t.Error(problem)
	}
}

// TestCheckNamesTheImportAndTheRule is the checker on a made-up module:
// each kind of drift fails with a message naming what to change.
func TestCheckNamesTheImportAndTheRule(t *testing.T) {
	rules, err := parseTable(strings.Join([]string{
		"| package | owns | may import |",
		"|---|---|---|",
		"| `graph` | the engine | nothing of ours |",
		"| `llm`, `llm/{a,b}test` | models | `graph`, `llm` (its tests' servers) |",
		"| `server` | http | `llm`, `internal/*` |",
		"| `cmd/x` | the CLI | anything |",
		"| `gone` | a package that was removed | nothing |",
	}, "\n"))
	require.NoError(t, err)
	pkgs := []string{"graph", "llm", "llm/atest", "llm/btest", "server", "cmd/x", "internal/pgdb", "orphan"}
	edges := []edge{
		{"llm", "graph", "llm/llm.go:3"},
		{"llm/atest", "llm", "llm/atest/srv.go:4"},
		{"server", "internal/pgdb", "server/db.go:5"},
		{"cmd/x", "server", "cmd/x/main.go:6"},
		{"server", "graph", "server/run.go:7"},
		{"graph", "llm", "graph/bad.go:8"},
	}
	got := check(rules, pkgs, edges)
	assert.Equal(t, []string{
		"layering: server imports graph (server/run.go:7), but its row (docs/architecture.md:5, `server`) allows `llm`, `internal/*`: remove the import or add the edge to the row with its reason",
		"layering: graph imports llm (graph/bad.go:8), but its row (docs/architecture.md:3, `graph`) allows nothing of ours: remove the import or add the edge to the row with its reason",
		"layering: package internal/pgdb has no row in docs/architecture.md's import table: add one (what it owns, what it may import)",
		"layering: package orphan has no row in docs/architecture.md's import table: add one (what it owns, what it may import)",
		"layering: docs/architecture.md:7 names `gone`, which matches no package: remove or fix the row",
	}, got)
}

// parseTable reads the import table: the rows after the header whose
// third column is "may import".
func parseTable(doc string) ([]rule, error) {
	var rules []rule
	in := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := splitRow(line)
		if !in {
			if len(cells) == 3 && cells[0] == "package" && cells[2] == "may import" {
				in = true
			}
			continue
		}
		if strings.Trim(line, "|-: ") == "" {
			continue
		}
		if len(cells) != 3 {
			return nil, fmt.Errorf("layering: docs/architecture.md:%d: a row has %d columns, want 3", n, len(cells))
		}
		r := rule{line: n, pkgs: expand(quoted(cells[0]))}
		if len(r.pkgs) == 0 {
			return nil, fmt.Errorf("layering: docs/architecture.md:%d: the first column names no package in backquotes", n)
		}
		allow := cells[2]
		switch {
		case strings.HasPrefix(allow, "anything"):
			r.anything = true
		case strings.HasPrefix(allow, "nothing"):
		default:
			r.allow = expand(quoted(allow))
			if len(r.allow) == 0 {
				return nil, fmt.Errorf("layering: docs/architecture.md:%d: %q is neither nothing, anything nor a list of packages in backquotes", n, allow)
			}
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

// splitRow splits a Markdown table row into trimmed cells.
func splitRow(line string) []string {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// quoted returns the backquoted words of a cell; words outside backquotes
// are reasons.
func quoted(cell string) []string {
	var out []string
	for _, m := range backquoted.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// expand expands one level of braces: a/{b,c}d is a/bd and a/cd.
func expand(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		i, j := strings.Index(p, "{"), strings.Index(p, "}")
		if i < 0 || j < i {
			out = append(out, p)
			continue
		}
		for _, alt := range strings.Split(p[i+1:j], ",") {
			out = append(out, p[:i]+alt+p[j+1:])
		}
	}
	return out
}

// match reports whether pkg is named by pattern: itself, or for x/*,
// any package under x.
func match(pattern, pkg string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(pkg, prefix+"/")
	}
	return pattern == pkg
}

// check returns one message per broken rule: an import a row does not
// allow, a package with no row (or two), a row that names no package.
func check(rules []rule, pkgs []string, edges []edge) []string {
	var problems []string
	of := map[string]*rule{}
	used := make([]bool, len(rules))
	var orphans []string
	for _, p := range pkgs {
		var mine []int
		for i := range rules {
			if slices.ContainsFunc(rules[i].pkgs, func(pat string) bool { return match(pat, p) }) {
				mine = append(mine, i)
			}
		}
		switch len(mine) {
		case 0:
			orphans = append(orphans, fmt.Sprintf("layering: package %s has no row in docs/architecture.md's import table: add one (what it owns, what it may import)", p))
		case 1:
			of[p] = &rules[mine[0]]
			used[mine[0]] = true
		default:
			lines := make([]string, len(mine))
			for k, i := range mine {
				lines[k] = strconv.Itoa(rules[i].line)
				used[i] = true
			}
			orphans = append(orphans, fmt.Sprintf("layering: package %s matches the rows at docs/architecture.md:%s: give it one", p, strings.Join(lines, ", ")))
		}
	}
	for _, e := range edges {
		r := of[e.from]
		if r == nil || r.anything || slices.ContainsFunc(r.allow, func(pat string) bool { return match(pat, e.to) }) {
			continue
		}
		allows := "nothing of ours"
		if len(r.allow) > 0 {
			allows = "`" + strings.Join(r.allow, "`, `") + "`"
		}
		problems = append(problems, fmt.Sprintf("layering: %s imports %s (%s), but its row (docs/architecture.md:%d, `%s`) allows %s: remove the import or add the edge to the row with its reason",
			e.from, e.to, e.pos, r.line, strings.Join(r.pkgs, "`, `"), allows))
	}
	problems = append(problems, orphans...)
	for i, r := range rules {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("layering: docs/architecture.md:%d names `%s`, which matches no package: remove or fix the row", r.line, strings.Join(r.pkgs, "`, `")))
		}
	}
	return problems
}

// scan lists the module's packages (directories with non-test Go files)
// and their imports of ours, sorted.
func scan(t *testing.T, root string) ([]string, []edge) {
	t.Helper()
	fset := token.NewFileSet()
	seen := map[string]bool{}
	var edges []edge
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return fmt.Errorf("layering: %w", err)
		}
		for _, cg := range f.Comments {
			if cg.Pos() > f.Package {
				break
			}
			for _, c := range cg.List {
				if x, err := constraint.Parse(c.Text); err == nil && x.String() == "ignore" {
					return nil // a go run script, not part of the package
				}
			}
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		from := filepath.ToSlash(rel)
		seen[from] = true
		for _, im := range f.Imports {
			to, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			if to, ok := strings.CutPrefix(to, module+"/"); ok {
				pos := fset.Position(im.Pos())
				file, _ := filepath.Rel(root, pos.Filename)
				edges = append(edges, edge{from: from, to: to, pos: fmt.Sprintf("%s:%d", filepath.ToSlash(file), pos.Line)})
			}
		}
		return nil
	})
	require.NoError(t, err)
	pkgs := make([]string, 0, len(seen))
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	sort.Slice(edges, func(i, j int) bool { return edges[i].pos < edges[j].pos })
	return pkgs, edges
}

// moduleRoot is the directory of the go.mod above the test.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(data), "module "+module+"\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "layering: no go.mod of %s above the test", module)
		dir = parent
	}
}
