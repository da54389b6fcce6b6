package workflows

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// position is a place in a file, from 1.
type position struct{ line, col int }

// located is where an entry of the file is: its key (for a mapping entry;
// the item itself for a list element), its value, and its key path.
type located struct {
	key, val position
	path     string
	node     *yaml.Node
}

// document is a parsed YAML file: its value as JSON-like Go values (for
// the JSON Schema) and the location of every entry, by JSON pointer.
type document struct {
	file  string
	lines []string
	root  *yaml.Node
	value any
	at    map[string]located
	// limits bounds the conversion; see conversion limits below.
	limits conversion
}

// Conversion limits: a file is converted into values once, entry by entry,
// and an alias is converted again each time it is used. Without bounds
// an alias cycle never ends and a few hundred bytes of nested aliases
// ("billion laughs") expand into billions of entries.
const (
	// maxAliasNodes is how many entries aliases may add to a file.
	maxAliasNodes = 10_000
	// maxAliasBytes is how many bytes of text aliases may add to a file:
	// a few entries repeating a long text multiply bytes as a bomb
	// multiplies entries.
	maxAliasBytes = 4 << 20
	// maxDepth is how deeply entries may nest.
	maxDepth = 100
	// maxLocationBytes bounds the key paths recorded for the entries
	// (they locate problems), which grow with the file's depth.
	maxLocationBytes = 64 << 20
)

// conversion is the state of one conversion: what the limits leave, the
// anchored entries being converted (to find alias cycles), and whether a
// limit stopped it.
type conversion struct {
	aliasNodes int
	aliasBytes int
	locBytes   int
	open       map[*yaml.Node]bool
	stopped    bool
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses data; syntax errors and duplicate keys are problems.
func parseYAML(file string, data []byte, ps *problems) (*document, bool) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		pos, msg := position{1, 1}, err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			// yaml.v3 counts the lines of parser errors from 0 and those
			// of scanner errors from 1.
			if !scannerProblem(m[2]) {
				line++
			}
			pos, msg = position{line, 1}, m[2]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		ps.at(pos, "", "invalid YAML: %s", msg)
		return nil, false
	}
	d := &document{file: file, lines: strings.Split(string(data), "\n"), at: map[string]located{}}
	if root.Kind == 0 || len(root.Content) == 0 {
		ps.at(position{1, 1}, "", "the file is empty: a workflow starts with apiVersion: coorflow/v1")
		return nil, false
	}
	d.root = root.Content[0]
	d.limits.open = map[*yaml.Node]bool{}
	start := position{d.root.Line, d.root.Column}
	d.value = d.convert(d.root, "", "", start, nil, 0, ps)
	if d.limits.stopped {
		return nil, false
	}
	return d, true
}

// scannerProblems are the problems yaml.v3's scanner reports.
var scannerProblems = []string{
	"block sequence entries are not allowed", "could not find expected", "did not find expected alphabetic",
	"did not find expected comment", "did not find expected digit", "did not find expected hexdecimal",
	"did not find expected version", "did not find expected whitespace", "did not find the expected '>'",
	"exceeded max depth", "found a tab character", "found an indentation indicator", "found character that cannot start",
	"found extremely long", "found invalid Unicode", "found unexpected document indicator", "found unexpected end of stream",
	"found unexpected non-alphabetical", "found unknown", "mapping keys are not allowed", "mapping values are not allowed",
	"while ",
}

func scannerProblem(msg string) bool {
	for _, p := range scannerProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// convert turns n into JSON-like values, recording locations. via is the
// outermost alias being expanded (nil outside aliases) and depth how
// deeply n nests. It stops, with a problem, at an alias cycle or when a
// conversion limit is reached.
func (d *document) convert(n *yaml.Node, ptr, path string, key position, via *yaml.Node, depth int, ps *problems) any {
	if d.limits.stopped {
		return nil
	}
	for n.Kind == yaml.AliasNode {
		if !d.follow(n, path, ps) {
			return nil
		}
		if via == nil {
			via = n
		}
		n = n.Alias
	}
	if !d.charge(n, ptr, path, via, depth, ps) {
		return nil
	}
	if n.Anchor != "" {
		d.limits.open[n] = true
		defer delete(d.limits.open, n)
	}
	d.at[ptr] = located{key: key, val: position{n.Line, n.Column}, path: path, node: n}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			name := k.Value
			kpos := position{k.Line, k.Column}
			if line, dup := first[name]; dup {
				what := fmt.Sprintf("key %q", name)
				if ptr == "/nodes" {
					what = fmt.Sprintf("node %q", name)
				}
				ps.at(kpos, joinPath(path, name), "%s is defined twice (first at line %d); names must be unique", what, line)
				continue
			}
			first[name] = k.Line
			out[name] = d.convert(v, ptr+"/"+escapePointer(name), joinPath(path, name), kpos, via, depth+1, ps)
		}
		return out
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, item := range n.Content {
			out[i] = d.convert(item, ptr+"/"+strconv.Itoa(i), fmt.Sprintf("%s[%d]", path, i), position{item.Line, item.Column}, via, depth+1, ps)
		}
		return out
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil
}

// follow checks that alias n does not lead back into an entry being
// converted, which would expand forever.
func (d *document) follow(n *yaml.Node, path string, ps *problems) bool {
	if n.Alias == nil || !d.limits.open[n.Alias] {
		return true
	}
	ps.at(position{n.Line, n.Column}, path, "alias *%s is inside the entry anchored &%s (line %d) that it repeats, so it never ends: "+
		"an alias can only repeat an entry that does not contain it", n.Value, n.Alias.Anchor, n.Alias.Line)
	d.limits.stopped = true
	return false
}

// charge counts entry n against the conversion limits.
func (d *document) charge(n *yaml.Node, ptr, path string, via *yaml.Node, depth int, ps *problems) bool {
	l := &d.limits
	if via != nil {
		l.aliasNodes++
		if n.Kind == yaml.ScalarNode {
			l.aliasBytes += len(n.Value)
		}
	}
	l.locBytes += len(ptr) + len(path)
	var msg string
	pos := position{n.Line, n.Column}
	switch {
	case l.aliasNodes > maxAliasNodes:
		pos = position{via.Line, via.Column}
		msg = fmt.Sprintf("aliases expand the file by more than %d entries (this alias *%s is where the limit was reached): "+
			"anchors and aliases may repeat entries, not multiply them; write the entries out or use fewer aliases", maxAliasNodes, via.Value)
	case l.aliasBytes > maxAliasBytes:
		pos = position{via.Line, via.Column}
		msg = fmt.Sprintf("aliases expand the file by more than %d MiB of text (this alias *%s is where the limit was reached): "+
			"anchors and aliases may repeat entries, not multiply them; write the entries out or use fewer aliases", maxAliasBytes>>20, via.Value)
	case depth > maxDepth:
		msg = fmt.Sprintf("entries nest more than %d levels deep: a workflow file does not need that many; flatten this entry", maxDepth)
	case l.locBytes > maxLocationBytes:
		msg = fmt.Sprintf("the key paths of the file's entries add up to more than %d MiB: the file is too large or too deeply nested to check; split it or use shorter keys", maxLocationBytes>>20)
	default:
		return true
	}
	ps.at(pos, path, "%s", msg)
	l.stopped = true
	return false
}

// scalar decodes a scalar as JSON would hold it: numbers as json.Number.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return n.Value
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// loc returns the location of the entry at ptr, or of its nearest
// recorded parent.
func (d *document) loc(ptr string) located {
	for {
		if l, ok := d.at[ptr]; ok {
			return l
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return located{key: position{1, 1}, val: position{1, 1}}
		}
		ptr = ptr[:i]
	}
}

// node returns the YAML node at ptr, if any.
func (d *document) node(ptr string) *yaml.Node {
	if l, ok := d.at[ptr]; ok {
		return l.node
	}
	return nil
}

// textPos returns the position of the character at line and col (from 0)
// of the text of scalar node n.
func (d *document) textPos(n *yaml.Node, line, col int) position {
	if n == nil {
		return position{1, 1}
	}
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		l := n.Line + 1 + line // the text starts below the | or >
		indent := 0
		if n.Line < len(d.lines) {
			first := d.lines[n.Line]
			indent = len(first) - len(strings.TrimLeft(first, " "))
		}
		return position{l, indent + 1 + col}
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if line == 0 {
			return position{n.Line, n.Column + 1 + col}
		}
	default:
		if line == 0 {
			return position{n.Line, n.Column + col}
		}
	}
	return position{n.Line + line, 1}
}
