package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Namespace is the first segment of every path.
type Namespace string

// The namespaces.
const (
	NSProject Namespace = "project" // facts about the project: config, conventions, sources
	NSMemory  Namespace = "memory"  // long-term memory, archived transcripts
	NSMission Namespace = "mission" // mission boards, one per run: mission/<run-id>/...
	NSTeam    Namespace = "team"    // the agents: specs, notes shared by a team
)

// Namespaces lists the namespaces in the order they are documented.
var Namespaces = []Namespace{NSProject, NSMemory, NSMission, NSTeam}

// MaxPathLen is the longest path accepted, in bytes.
const MaxPathLen = 1024

const allowedNamespaces = "project/, memory/, mission/, team/"

// CheckPath reports whether p is a valid item path: at least two
// slash-separated segments, the first one a namespace, no empty, "." or
// ".." segment, no leading or trailing slash, valid UTF-8 without control
// characters, at most MaxPathLen bytes. The error wraps ErrInvalidPath.
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
// namespaces), a namespace, or a path prefix that starts with a namespace.
// A trailing slash is allowed.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkSegments(strings.TrimSuffix(prefix, "/"))
}

func checkSegments(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty path (want one of %s followed by a name)", ErrInvalidPath, allowedNamespaces)
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
	segs := strings.Split(p, "/")
	if !knownNamespace(segs[0]) {
		return fmt.Errorf("%w: %q is in unknown namespace %q (allowed: %s)", ErrInvalidPath, p, segs[0], allowedNamespaces)
	}
	for _, s := range segs {
		switch s {
		case "":
			return fmt.Errorf("%w: %q has an empty segment", ErrInvalidPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidPath, p, s)
		}
	}
	return nil
}

func knownNamespace(s string) bool {
	for _, ns := range Namespaces {
		if string(ns) == s {
			return true
		}
	}
	return false
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
