// Package clitest runs the coorflow command as a newcomer types it, for the
// tests of the examples: it builds cmd/coorflow for the test and runs it from the module's root, with no model provider in the
// environment (the examples then run on their demo scripts) and a database
// of the test's own.
package clitest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CLI runs coorflow commands against one database.
type CLI struct {
	t    *testing.T
	root string
	bin  string
	db   string
}

// New builds coorflow (the build cache makes it quick after the first
// time) and returns a CLI with a fresh database. root is the module's root, relative to the test's
// directory ("../.." for examples/NAME).
func New(t *testing.T, root string) *CLI {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatalf("clitest: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "coorflow")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/coorflow")
	cmd.Dir = abs
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clitest: build coorflow: %v\n%s", err, out)
	}
	return &CLI{t: t, root: abs, bin: bin, db: filepath.Join(dir, "coorflow.db")}
}

// Run runs "coorflow args..." from the module's root, as the README's
// "go run ./cmd/coorflow args..." does, and returns its exit code, stdout
// and stderr. Its environment holds only PATH, HOME and COORFLOW_DB.
func (c *CLI) Run(args ...string) (int, string, string) {
	c.t.Helper()
	return c.RunWith(nil, args...)
}

// Command returns the command "coorflow args..." as Run runs it, with env
// ("KEY=VALUE") added to its environment, for a test to start, signal
// and wait for.
func (c *CLI) Command(env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(c.t.Context(), c.bin, args...)
	cmd.Dir = c.root
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.t.TempDir(), "COORFLOW_DB=" + c.db}, env...)
	return cmd
}

// RunWith is Run with env ("KEY=VALUE") added to the environment.
func (c *CLI) RunWith(env []string, args ...string) (int, string, string) {
	c.t.Helper()
	cmd := c.Command(env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("clitest: coorflow %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errOut.String()
}
