package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPathLen is the longest path accepted, in bytes.
const MaxPathLen = 1024

// CheckPath reports whether p is a valid item path: <namespace>/<name>,
// that is at least two slash-separated segments, the first of which is
// the item's namespace; no empty, "." or ".." segment, so no leading or
// trailing slash; valid UTF-8 without control characters; at most
// MaxPathLen bytes. Any segment may be a namespace: which namespaces mean
// what is the business of the store's users (see store/board). The error
// wraps ErrInvalidPath.
func CheckPath(p string) error {
	if err := checkSegments(p); err != nil {
		return err
	}
	if !strings.Contains(p, "/") {
		return fmt.Errorf("%w: %q names a namespace, not an item (want %s<name>)", ErrInvalidPath, p, p+"/")
	}
	return nil
}

// CheckPrefix reports whether prefix may be listed or searched: empty (all
// namespaces), a namespace, or the start of a path, with the rules of
// CheckPath for each segment. A trailing slash is allowed.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkSegments(strings.TrimSuffix(prefix, "/"))
}

func checkSegments(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty path (want <namespace>/<name>)", ErrInvalidPath)
	}
	if len(p) > MaxPathLen {
		return fmt.Errorf("%w: path of %d bytes is longer than %d", ErrInvalidPath, len(p), MaxPathLen)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidPath, p)
	}
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: %q contains a control character", ErrInvalidPath, p)
	}
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "":
			return fmt.Errorf("%w: %q has an empty segment", ErrInvalidPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidPath, p, s)
		}
	}
	return nil
}

// CheckSegment reports whether s can be used as one path segment (an id or
// a name inside a path): non-empty, no slash, not "." or "..", no control
// characters. The error wraps ErrInvalidPath.
func CheckSegment(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty name", ErrInvalidPath)
	case s == "." || s == "..":
		return fmt.Errorf("%w: %q is not a name", ErrInvalidPath, s)
	case strings.Contains(s, "/"):
		return fmt.Errorf("%w: name %q contains a slash", ErrInvalidPath, s)
	case !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: name %q contains invalid characters", ErrInvalidPath, s)
	}
	return nil
}
