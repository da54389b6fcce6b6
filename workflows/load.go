package workflows

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/expr-lang/expr/vm"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/skills"
	"github.com/coorflow/coorflow/tools"
)

// File is a workflow file that loaded and passed validation: every name it
// uses exists, every expression compiles against its channels. Compile
// turns it into a graph.
type File struct {
	path   string
	dir    string
	doc    *document
	spec   *fileSpec
	opts   loadOptions
	chans  []*channel
	byName map[string]*channel
	scope  *scope
	nodes  []*fileNode
	byNode map[string]*fileNode
	edges  []*fileEdge
	tools  map[string]named[toolSpec]
	skills *skills.Set
	// size counts the nodes of the file and of its subgraphs, each
	// subgraph once per inclusion: what Compile builds.
	size int
	// unsureGraph is set when a problem leaves the graph's nodes or
	// routes unknown (a bad name, a reference to no node, a broken edge
	// or route): its shape is then not judged.
	unsureGraph bool
}

// fileNode is a node of the file with what was compiled for it.
type fileNode struct {
	named[nodeSpec]
	system, prompt *template
	routes         []route
	args           []arg
	output         *channel
	sub            *File
	team           *fixedTeam  // a team node's plan and agents sections
	set            []setter    // its set section
	emit           *vm.Program // its emit expression
	delay          *vm.Program // its delay expression
	payload        *vm.Program // an interrupt node's payload
}

type route struct {
	label string
	when  *vm.Program
	to    string
	set   []setter
}

type arg struct {
	name string
	prog *vm.Program
}

type fileEdge struct {
	edgeSpec
	routes []route
	set    []setter // a static edge's
}

// LoadOption configures Load and Parse.
type LoadOption func(*loadOptions)

type loadOptions struct {
	funcs map[string]graph.NodeFunc
	tools *tools.Registry
	// unregistered accepts tools no program registered.
	unregistered bool
	// roots are directories, besides the workflow's own, that its
	// subgraph files may be in.
	roots []string
	// allowEnv are the environment variables ${...} may read besides
	// the default ones (name patterns).
	allowEnv []string
	stack    []string // files being loaded (resolved paths), for subgraph cycles
	session  *session // shared by the files of one Load
}

// WithFuncs registers the Go functions that nodes of type go name. Files
// that use go nodes need them to compile; Load checks the names when they
// are given.
func WithFuncs(funcs map[string]graph.NodeFunc) LoadOption {
	return func(o *loadOptions) { o.funcs = funcs }
}

// WithTools registers tools, written in Go, that the file's tools section
// may name besides the built-ins. A tool registered under the name of a
// built-in one (web_search, python, http_fetch, ask_human) replaces it:
// of the file's settings for it, only timeout applies.
func WithTools(reg *tools.Registry) LoadOption {
	return func(o *loadOptions) { o.tools = reg }
}

// WithUnregistered accepts tools that are neither built in nor registered
// with WithTools, for checking and drawing a file outside the program that
// runs it: Unregistered lists them, and only an Env.Offline compilation
// succeeds.
func WithUnregistered() LoadOption {
	return func(o *loadOptions) { o.unregistered = true }
}

// WithIncludeRoot lets the subgraph files of a workflow be in the
// directory tree of dir as well as in the workflow's own. By default they
// must be in the workflow's own directory tree, after resolving symbolic
// links.
func WithIncludeRoot(dir string) LoadOption {
	return func(o *loadOptions) { o.roots = append(o.roots, dir) }
}

// Load reads and validates the workflow file at path. Every problem found
// is reported at once, each with its file:line:column and key path, in a
// *FileError (errors.Is ErrInvalidFile).
func Load(path string, opts ...LoadOption) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workflows: %w", err)
	}
	return Parse(path, data, opts...)
}

// Parse validates a workflow file held in memory; path names it in
// problems and locates the files it refers to (demo script, subgraphs).
func Parse(path string, data []byte, opts ...LoadOption) (*File, error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	return parse(path, data, o)
}

func parse(path string, data []byte, o loadOptions) (*File, error) {
	if o.session == nil {
		o.session = newSession(path, o.roots)
	}
	ps := &problems{file: path}
	d, ok := parseYAML(path, data, ps)
	if !ok {
		return nil, ps.err()
	}
	if err := d.validateSchema(ps); err != nil {
		return nil, err
	}
	schemaProblems := len(ps.list)
	spec, err := decodeSpec(d, schemaProblems > 0)
	if err != nil {
		return nil, err
	}
	f := &File{path: path, dir: filepath.Dir(path), doc: d, spec: spec, opts: o, size: len(spec.nodes)}
	f.opts.stack = append(slices.Clone(o.stack), resolved(path))
	if schemaProblems == 0 {
		f.check(ps)
	} else {
		f.checkInvalid(ps, schemaProblems)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// checkInvalid runs the checks of a file that failed the schema, whose
// problems are the first n of ps, so that the file's other problems are
// reported with them; an entry the schema found wrong (or one with such
// an entry in it) is not reported again by the checks. The checks expect what the
// schema guarantees: should one fail on what it did not, the schema's
// problems stand alone.
func (f *File) checkInvalid(ps *problems, n int) {
	schema := slices.Clone(ps.list[:n])
	defer func() {
		if recover() != nil {
			ps.list = schema
		}
	}()
	f.unsureGraph = slices.ContainsFunc(schema, structural)
	f.check(ps)
	kept := ps.list[:n]
	for _, p := range ps.list[n:] {
		related := func(s Problem) bool {
			entry := missingPath(s) // what the checks find wrong is the missing field, not its entry
			return s.File == p.File && (within(p.Path, entry) || (!s.unknown && p.Path != "" && within(entry, p.Path)))
		}
		if !slices.ContainsFunc(schema, related) {
			kept = append(kept, p)
		}
	}
	ps.list = kept
}

// routingFields are the fields of a node that say where the run goes next.
var routingFields = []string{"type", "next", "review", "reporter", "replan", "workers", "planner", "routes", "destinations"}

// structural reports whether a schema problem leaves the graph's shape
// unknown: one in the edges, in the nodes section as a whole, or in a
// node's type or routing fields.
func structural(p Problem) bool {
	path := missingPath(p)
	if path == "" || path == "nodes" || within(path, "edges") {
		return true
	}
	rest, ok := strings.CutPrefix(path, "nodes.")
	if !ok {
		return false
	}
	parts := strings.SplitN(rest, ".", 3)
	return len(parts) < 2 || slices.Contains(routingFields, strings.SplitN(parts[1], "[", 2)[0])
}

// missingPath is the key path of the field a problem says is missing,
// or its own path.
func missingPath(p Problem) string {
	if p.missing == "" {
		return p.Path
	}
	return joinPath(p.Path, p.missing)
}

// within reports whether key path p is path or an entry under it.
func within(p, path string) bool {
	if path == "" || p == path {
		return true
	}
	rest, ok := strings.CutPrefix(p, path)
	return ok && (rest[0] == '.' || rest[0] == '[')
}

// Path returns the file's path as given to Load.
func (f *File) Path() string { return f.path }

// Name returns the workflow's name (the graph's name).
func (f *File) Name() string { return f.spec.Name }

// Description returns the workflow's description.
func (f *File) Description() string { return f.spec.Description }

// InputChannel is the channel a run's input text is written to (input by
// default).
func (f *File) InputChannel() string {
	if f.spec.Input != "" {
		return f.spec.Input
	}
	return "input"
}

// OutputChannel is the channel that holds the run's result (answer by
// default).
func (f *File) OutputChannel() string {
	if f.spec.Output != "" {
		return f.spec.Output
	}
	return "answer"
}

// DemoScript returns the path of the scripted demo model's script, or ""
// when the file has none.
func (f *File) DemoScript() string {
	if f.spec.Demo == nil {
		return ""
	}
	return filepath.Join(f.dir, f.spec.Demo.Script)
}

// Nodes returns the names of the file's nodes, in file order.
func (f *File) Nodes() []string {
	out := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		out[i] = n.Name
	}
	return out
}

// NodeType returns the type of the node called name (team, planner...),
// or "" when the file has no such node.
func (f *File) NodeType(name string) string {
	if n, ok := f.byNode[name]; ok {
		return n.Spec.Type
	}
	return ""
}

// Unregistered names what the file needs from the program that runs it
// and was not given: "tool NAME" (loaded WithUnregistered) and
// "function NAME" (go nodes, loaded without WithFuncs).
func (f *File) Unregistered() []string {
	var out []string
	for _, t := range f.spec.tools {
		if !isBuiltinTool(t.Name) && (f.opts.tools == nil || !hasTool(f.opts.tools.Names(), t.Name)) {
			out = append(out, "tool "+t.Name)
		}
	}
	for _, n := range f.allNodes() {
		if n.Spec.Type == "go" {
			if _, ok := f.opts.funcs[n.Spec.Func]; !ok {
				out = append(out, "function "+n.Spec.Func)
			}
		}
	}
	return slices.Compact(out)
}

// NeedsModels reports whether a node of the file calls a model.
func (f *File) NeedsModels() bool {
	for _, n := range f.allNodes() {
		if nodeKinds[n.Spec.Type].model {
			return true
		}
	}
	return false
}

// allNodes returns the file's nodes and those of its subgraphs.
func (f *File) allNodes() []*fileNode {
	var out []*fileNode
	for _, n := range f.nodes {
		out = append(out, n)
		if n.sub != nil {
			out = append(out, n.sub.allNodes()...)
		}
	}
	return out
}

// loadSub loads the file of a subgraph node, relative to this file: once
// per Load, however many nodes include it.
func (f *File) loadSub(ps *problems, n named[nodeSpec]) *File {
	l := f.doc.loc(n.Ptr + "/file")
	name := n.Spec.File
	real, ok := f.reach(ps, l, "subgraph file", name)
	if !ok {
		return nil
	}
	if slices.Contains(f.opts.stack, real) {
		ps.at(l.val, l.path, "subgraph file %s includes itself (through %d files)", name, len(f.opts.stack))
		return nil
	}
	sub, err, first := f.opts.session.load(real, func() (*File, error) {
		data, err := readOwnFile(real, "subgraph file", name, maxSubgraphBytes, "a workflow file is a few KiB")
		if err != nil {
			return nil, errOwnFile{err}
		}
		return parse(f.join(name), data, f.opts)
	})
	var fe *FileError
	var ofe errOwnFile
	switch {
	case errors.Is(err, errTooManyFiles):
		ps.at(l.val, l.path, "subgraph file %s is one file too many: a workflow may include at most %d files; merge some of them", name, maxFiles)
		return nil
	case errors.As(err, &ofe):
		ps.at(l.val, l.path, "%v", ofe.error)
		return nil
	case errors.As(err, &fe):
		ps.at(l.val, l.path, "subgraph file %s is invalid (%d problems, below)", name, len(fe.Problems))
		if first {
			ps.add(fe.Problems...)
		}
		return nil
	case err != nil:
		ps.at(l.val, l.path, "subgraph file %s cannot be read: %v", name, unwrapPath(err))
		return nil
	}
	if f.size+sub.size > maxNodes {
		ps.at(l.val, l.path, "subgraph file %s brings the workflow to more than %d nodes, counting the nodes of each subgraph once per inclusion: "+
			"include fewer files or include them fewer times", name, maxNodes)
		return nil
	}
	f.size += sub.size
	return sub
}

// errOwnFile is a file the workflow names that readOwnFile refused; its
// message is the whole problem.
type errOwnFile struct{ error }

// join returns the path of a file the workflow names, relative to its
// directory.
func (f *File) join(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(f.dir, name)
}

// reach resolves the file or folder name (a "subgraph file", a "skill
// folder"), located at l, and checks that it is inside the workflow's
// directory tree or another allowed root.
func (f *File) reach(ps *problems, l located, what, name string) (string, bool) {
	real, err := f.resolve(what, name)
	if err != nil {
		ps.at(l.val, l.path, "%v", err)
		return "", false
	}
	return real, true
}

// resolve is reach's check, with the problem as an error.
func (f *File) resolve(what, name string) (string, error) {
	real, err := filepath.EvalSymlinks(f.join(name))
	if err != nil {
		return "", fmt.Errorf("%s %s cannot be read: %w", what, name, unwrapPath(err))
	}
	real = resolved(real)
	if f.opts.session.allowed(real) {
		return real, nil
	}
	return "", fmt.Errorf("%s %s is outside the workflow's directory %s (it is %s): a workflow may only use files in its own directory tree; "+
		"move the file there, or let the program that loads the workflow allow its directory (coorflow --include-root DIR, workflows.WithIncludeRoot)",
		what, name, f.opts.session.roots[0], real)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
