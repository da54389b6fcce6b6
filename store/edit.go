package store

import (
	"fmt"
	"strings"
)

// EditKind says what an Edit does to the content.
type EditKind string

// The kinds of edit.
const (
	// EditReplace replaces the whole content with Edit.Content.
	EditReplace EditKind = "replace"
	// EditSearchReplace replaces the one occurrence of Edit.Old with
	// Edit.New; zero or several occurrences are errors (ErrNoMatch,
	// ErrAmbiguous), so an edit never lands in the wrong place.
	EditSearchReplace EditKind = "search_replace"
	// EditAttrs leaves the content as it is and changes only attributes.
	EditAttrs EditKind = "attrs"
)

// Edit is a change to one item, based on the revision the caller read.
//
// When Revision is the item's current revision the edit is applied. When it
// is older, the edit is merged only if the item is a JSON object and the
// edit changes no attributes: the edit is applied to the content of that
// older revision (kept by the store, see Config.KeepRevisions), and its
// changes to top-level fields are carried over to the current content
// wherever the same fields were not changed since. Every other stale edit
// fails with a *ConflictError; nothing is silently overwritten.
type Edit struct {
	Revision int64    // the revision the edit is based on; required
	Kind     EditKind // required
	Content  string   // EditReplace: the new content
	Old      string   // EditSearchReplace: the text to find (non-empty)
	New      string   // EditSearchReplace: its replacement
	// Attrs, when not nil, changes attributes: its non-zero fields replace
	// the item's, zero fields keep them; its labels are set on the item's,
	// and a label with an empty value is removed.
	Attrs *Attrs
}

// Replace returns an edit that replaces the whole content of revision rev.
func Replace(rev int64, content string) Edit {
	return Edit{Revision: rev, Kind: EditReplace, Content: content}
}

// SearchReplace returns an edit that replaces the single occurrence of old
// in revision rev with repl.
func SearchReplace(rev int64, old, repl string) Edit {
	return Edit{Revision: rev, Kind: EditSearchReplace, Old: old, New: repl}
}

// SetAttrs returns an edit that changes only attributes of revision rev.
func SetAttrs(rev int64, a Attrs) Edit {
	return Edit{Revision: rev, Kind: EditAttrs, Attrs: &a}
}

// WithAttrs returns a copy of e that also changes attributes.
func (e Edit) WithAttrs(a Attrs) Edit {
	e.Attrs = &a
	return e
}

// check reports what is malformed in e, before any item is read.
func (e Edit) check() error {
	if e.Revision < 1 {
		return fmt.Errorf("%w: an edit needs the revision it is based on (got %d)", ErrInvalid, e.Revision)
	}
	switch e.Kind {
	case EditReplace:
	case EditSearchReplace:
		if e.Old == "" {
			return fmt.Errorf("%w: search-and-replace edit with an empty search text", ErrInvalid)
		}
	case EditAttrs:
		if e.Attrs == nil {
			return fmt.Errorf("%w: attribute edit without attributes", ErrInvalid)
		}
	case "":
		return fmt.Errorf("%w: edit kind missing (use Replace, SearchReplace or SetAttrs)", ErrInvalid)
	default:
		return fmt.Errorf("%w: unknown edit kind %q", ErrInvalid, e.Kind)
	}
	return nil
}

// apply returns content changed by e. The error wraps ErrNoMatch or
// ErrAmbiguous.
func (e Edit) apply(content string) (string, error) {
	switch e.Kind {
	case EditReplace:
		return e.Content, nil
	case EditSearchReplace:
		i := strings.Index(content, e.Old)
		if i < 0 {
			return "", fmt.Errorf("%w: %s does not occur in the item", ErrNoMatch, quoteShort(e.Old))
		}
		if n := countOverlapping(content, e.Old); n > 1 {
			return "", fmt.Errorf("%w: %s occurs %d times; add surrounding text to make it unique", ErrAmbiguous, quoteShort(e.Old), n)
		}
		return content[:i] + e.New + content[i+len(e.Old):], nil
	}
	return content, nil
}

func countOverlapping(s, sub string) int {
	n := 0
	for {
		i := strings.Index(s, sub)
		if i < 0 {
			return n
		}
		n++
		s = s[i+1:]
	}
}

// quoteShort quotes s, shortened to about 60 bytes for error messages.
func quoteShort(s string) string {
	const max = 60
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
