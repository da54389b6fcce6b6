// Package npmtest finds the npm packages a test package pins (a
// package.json and package-lock.json in its npm/ folder, installed by
// `npm ci` there — .ci/run does it into a cache per lockfile hash and
// names that node_modules in an environment variable).
//
// A test that needs them skips, saying why, only when node or the
// installed package is absent; under CI=true that is a failure.
package npmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Pinned is one test package's pinned npm packages.
type Pinned struct {
	// Name prefixes messages (the Go test package's name).
	Name string
	// Env names a node_modules directory to use instead of Dir/npm/node_modules.
	Env string
	// Dir is the test package's directory, holding npm/.
	Dir string
	// Package is the npm package whose presence says the install is there.
	Package string
}

// Unavailable skips t, or fails it when CI=true.
func (p Pinned) Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %s (CI=true: %s must be installed; see .ci/run)", p.Name, msg, p.Package)
	}
	t.Skipf("%s: %s", p.Name, msg)
}

// NodeModules returns the node_modules directory holding the pinned
// packages, or skips t.
func (p Pinned) NodeModules(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		p.Unavailable(t, "node is not installed: %v", err)
	}
	nm := os.Getenv(p.Env)
	if nm == "" {
		nm = filepath.Join(p.Dir, "npm", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(nm, p.Package, "package.json")); err != nil {
		p.Unavailable(t, "%s is not installed in %s: run `npm ci` in %s", p.Package, nm, filepath.Join(p.Dir, "npm"))
	}
	return nm
}
