package tools

import (
	"io"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped are elements whose content is never text for a reader.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Nav: true, atom.Svg: true, atom.Iframe: true,
	atom.Object: true, atom.Canvas: true, atom.Button: true, atom.Select: true,
}

// blocks are elements that start and end a paragraph.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Blockquote: true,
	atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Table: true, atom.Figure: true,
	atom.Figcaption: true, atom.Address: true, atom.Form: true, atom.Fieldset: true,
	atom.Details: true, atom.Summary: true, atom.Hr: true, atom.Body: true,
}

// lines are elements that sit on their own line without a blank line around.
var lines = map[atom.Atom]bool{
	atom.Li: true, atom.Tr: true, atom.Dt: true, atom.Dd: true, atom.Caption: true,
}

var headingLevel = map[atom.Atom]int{
	atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6,
}

// htmlToText extracts the readable text of an HTML document: the title, and
// the body with scripts, styles and navigation dropped, headings marked with
// "#", list items with "-", links followed by their absolute URL, and
// whitespace collapsed.
func htmlToText(r io.Reader, base *url.URL) (title, text string, err error) {
	doc, err := html.Parse(r)
	if err != nil {
		return "", "", err
	}
	w := &textWriter{base: base}
	title = findTitle(doc)
	w.node(doc)
	return title, w.String(), nil
}

// findTitle returns the collapsed text of the first <title>.
func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		var t textWriter
		t.children(n)
		return t.String()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

// textWriter accumulates lines of text; the current line collects inline
// text with whitespace collapsed.
type textWriter struct {
	base  *url.URL
	out   []string
	line  strings.Builder
	space bool // a space is owed before the next inline text
	pre   int  // depth of <pre> elements
}

// String returns the lines written so far, with runs of blank lines
// collapsed to one and no blank lines at either end.
func (w *textWriter) String() string {
	w.endLine()
	var kept []string
	for _, l := range w.out {
		if l == "" && (len(kept) == 0 || kept[len(kept)-1] == "") {
			continue
		}
		kept = append(kept, l)
	}
	for len(kept) > 0 && kept[len(kept)-1] == "" {
		kept = kept[:len(kept)-1]
	}
	return strings.Join(kept, "\n")
}

// endLine moves the current line, if any, to the output.
func (w *textWriter) endLine() {
	if w.line.Len() > 0 {
		w.out = append(w.out, w.line.String())
		w.line.Reset()
	}
	w.space = false
}

// endBlock ends the current line and leaves a blank line.
func (w *textWriter) endBlock() {
	w.endLine()
	w.out = append(w.out, "")
}

// inline writes text with whitespace collapsed.
func (w *textWriter) inline(s string) {
	for _, r := range s {
		if unicode.IsSpace(r) {
			w.space = w.line.Len() > 0
			continue
		}
		if w.space {
			w.line.WriteByte(' ')
			w.space = false
		}
		w.line.WriteRune(r)
	}
}

// preformatted writes text keeping its line breaks and spacing.
func (w *textWriter) preformatted(s string) {
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		if i > 0 {
			w.out = append(w.out, w.line.String())
			w.line.Reset()
		}
		w.line.WriteString(strings.TrimRight(p, " \t\r"))
	}
}

func (w *textWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		if w.pre > 0 {
			w.preformatted(n.Data)
		} else {
			w.inline(n.Data)
		}
		return
	case html.ElementNode:
		w.element(n)
		return
	}
	w.children(n)
}

func (w *textWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

func (w *textWriter) element(n *html.Node) {
	a := n.DataAtom
	if skipped[a] || hidden(n) {
		return
	}
	switch {
	case headingLevel[a] > 0:
		w.endBlock()
		w.line.WriteString(strings.Repeat("#", headingLevel[a]) + " ")
		w.children(n)
		w.endBlock()
	case a == atom.Pre:
		w.endBlock()
		w.pre++
		w.children(n)
		w.pre--
		w.endBlock()
	case a == atom.Br:
		w.endLine()
	case a == atom.Li:
		w.endLine()
		w.line.WriteString("- ")
		w.children(n)
		w.endLine()
	case a == atom.Td || a == atom.Th:
		if w.line.Len() > 0 {
			w.line.WriteString(" | ")
			w.space = false
		}
		w.children(n)
	case a == atom.A:
		w.link(n)
	case blocks[a]:
		w.endBlock()
		w.children(n)
		w.endBlock()
	case lines[a]:
		w.endLine()
		w.children(n)
		w.endLine()
	default:
		w.children(n)
	}
}

// link writes the link's text followed by its absolute URL, unless the
// link has no text, leads nowhere useful, or its text is the URL.
func (w *textWriter) link(n *html.Node) {
	before := w.line.Len()
	w.children(n)
	after := w.line.String()
	if len(after) <= before {
		return // no text on this line, e.g. an icon
	}
	label := strings.TrimSpace(after[before:])
	href := w.resolve(attr(n, "href"))
	if href == "" || href == label {
		return
	}
	w.inline(" (" + href + ")")
}

// resolve makes href absolute; fragments and scripts resolve to "".
func (w *textWriter) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") || strings.HasPrefix(strings.ToLower(href), "javascript:") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if w.base != nil {
		u = w.base.ResolveReference(u)
	}
	return u.String()
}

// hidden reports elements marked as not shown to readers.
func hidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch {
		case a.Key == "hidden",
			a.Key == "aria-hidden" && a.Val == "true",
			a.Key == "role" && a.Val == "navigation":
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
