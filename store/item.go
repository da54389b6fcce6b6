package store

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ContentType says how an item's content is to be read.
type ContentType string

// The content types.
const (
	ContentText ContentType = "text"
	ContentJSON ContentType = "json" // valid JSON; objects merge field by field on stale edits
)

// Attrs are the metadata a writer chooses for an item: the two the store
// acts on, visibility (checked by views, see Bind) and content type
// (checked, and merged for JSON), and free-form labels the store keeps
// without reading them. A zero Visibility is public, a zero ContentType
// text.
type Attrs struct {
	// Labels are key-value pairs the store's users give their own meaning
	// (store/board keeps an item's priority, trust, sensitivity and
	// trigger in them). Keys are at most MaxLabelKeyLen bytes of ASCII
	// letters, digits, '.', '_', '-' and '/'; values at most
	// MaxLabelValueLen bytes of UTF-8 text without control characters; at
	// most MaxLabels of them. A label with an empty value is no label: Add
	// leaves it out, and in an Edit it removes the label.
	Labels      map[string]string `json:"labels,omitempty"`
	Visibility  Visibility        `json:"visibility"`
	ContentType ContentType       `json:"content_type"`
}

// Limits on labels.
const (
	MaxLabels        = 32
	MaxLabelKeyLen   = 64
	MaxLabelValueLen = 256
)

// Meta describes a stored item without its content.
type Meta struct {
	Path string `json:"path"`
	Attrs
	Size     int64     `json:"size"` // content length in bytes
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Revision int64     `json:"revision"` // 1 when added, +1 per write
}

// Item is a stored item: its metadata and its content.
type Item struct {
	Meta
	Content string `json:"content"`
}

// withDefaults returns a with its zero fields set to their defaults and
// its labels copied, without empty values (nil when none is left).
func (a Attrs) withDefaults() Attrs {
	a.Labels = patchLabels(nil, a.Labels)
	if a.Visibility.Scope == "" {
		a.Visibility.Scope = ScopePublic
	}
	if a.ContentType == "" {
		a.ContentType = ContentText
	}
	return a
}

// patch returns a with the non-zero fields of p; p's labels are merged
// into a's.
func (a Attrs) patch(p *Attrs) Attrs {
	if p == nil {
		return a
	}
	a.Labels = patchLabels(a.Labels, p.Labels)
	if p.Visibility.Scope != "" {
		a.Visibility = p.Visibility
	}
	if p.ContentType != "" {
		a.ContentType = p.ContentType
	}
	return a
}

// patchLabels returns a copy of labels with p applied: a key with a value
// sets it, a key with an empty value removes it. It returns nil rather
// than an empty map.
func patchLabels(labels, p map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+len(p))
	maps.Copy(out, labels)
	for k, v := range p {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// validate reports the first field of a (after defaults) that holds an
// unknown or malformed value.
func (a Attrs) validate() error {
	switch a.ContentType {
	case ContentText, ContentJSON:
	default:
		return fmt.Errorf("unknown content type %q (want text or json)", a.ContentType)
	}
	if err := checkLabels(a.Labels); err != nil {
		return err
	}
	return a.Visibility.validate()
}

func checkLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%d labels, more than %d", len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		switch {
		case k == "":
			return fmt.Errorf("empty label key (label value %q)", v)
		case len(k) > MaxLabelKeyLen:
			return fmt.Errorf("label key %q is longer than %d bytes", k, MaxLabelKeyLen)
		case strings.IndexFunc(k, badKeyRune) >= 0:
			return fmt.Errorf("label key %q has a character other than ASCII letters, digits, '.', '_', '-' and '/'", k)
		case len(v) > MaxLabelValueLen:
			return fmt.Errorf("label %q has a value of %d bytes, longer than %d", k, len(v), MaxLabelValueLen)
		case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
			return fmt.Errorf("label %q has a value that is not UTF-8 text without control characters", k)
		}
	}
	return nil
}

func badKeyRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("._-/", r)
}
