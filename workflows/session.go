package workflows

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Limits on what one Load reads: the files of subgraphs are read once
// each, but a tree of files that include one another many times can
// still describe a graph too large to build.
const (
	// maxFiles is how many files one workflow may include, all levels
	// together, each counted once.
	maxFiles = 100
	// maxNodes is how many nodes a workflow may have, counting the
	// nodes of a subgraph once per inclusion.
	maxNodes = 10_000
)

// errTooManyFiles: a Load would read more than maxFiles files.
var errTooManyFiles = errors.New("workflows: too many subgraph files")

// session is what the files of one Load share: the directories they may
// refer to and the files already loaded, by resolved path.
type session struct {
	roots []string
	files map[string]loaded
	read  int // files read, counted when their reading starts
}

type loaded struct {
	f   *File
	err error
}

// newSession starts the Load of the workflow at path: its files may be
// in its own directory tree and in the trees of roots.
func newSession(path string, roots []string) *session {
	s := &session{files: map[string]loaded{}}
	for _, dir := range append([]string{filepath.Dir(path)}, roots...) {
		s.roots = append(s.roots, resolved(dir))
	}
	return s
}

// allowed reports whether the resolved path is inside one of the roots.
func (s *session) allowed(path string) bool {
	for _, root := range s.roots {
		if rel, err := filepath.Rel(root, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// load returns the file at the resolved path, loading it with read the
// first time; first reports whether this call loaded it.
func (s *session) load(path string, read func() (*File, error)) (f *File, err error, first bool) {
	if l, ok := s.files[path]; ok {
		return l.f, l.err, false
	}
	if s.read >= maxFiles {
		return nil, errTooManyFiles, false
	}
	s.read++
	f, err = read()
	s.files[path] = loaded{f: f, err: err}
	return f, err, true
}

// resolved returns path made absolute with its symbolic links resolved,
// as far as they can be.
func resolved(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	if _, err := os.Lstat(path); err != nil {
		// A file not on disk (Parse of data in memory): resolve its
		// directory.
		if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			return filepath.Join(dir, filepath.Base(path))
		}
	}
	return path
}
