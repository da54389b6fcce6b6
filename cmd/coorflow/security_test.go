package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/trace"
)

// served is a coorflow serve running in process.
type served struct {
	t    *testing.T
	addr string
	stop func() (int, string) // stops it: exit code and stderr
}

// serve starts coorflow serve with args on a free port and returns once
// it listens (and has pruned at start).
func (c *cli) serve(args ...string) *served {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	pr, pw := io.Pipe()
	c.ctx, c.stdout = ctx, pw
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := c.run(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		_ = pw.Close()
		done <- result{code, stderr}
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		cancel()
		r := <-done
		c.t.Fatalf("serve stopped (exit %d): %s", r.code, r.stderr)
	}
	addr := regexp.MustCompile(`http://[0-9.:]+`).FindString(lines.Text())
	require.NotEmpty(c.t, addr, lines.Text())
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for lines.Scan() {
		}
	}()
	s := &served{t: c.t, addr: addr}
	s.stop = func() (int, string) {
		cancel()
		r := <-done
		<-drained
		c.ctx, c.stdout = nil, nil
		return r.code, r.stderr
	}
	c.t.Cleanup(func() {
		if c.ctx == ctx {
			s.stop()
		}
	})
	return s
}

// get sends GET path with a bearer token.
func (s *served) get(path, token string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), "GET", s.addr+path, nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tokenFile writes a token file with mode perm.
func tokenFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(p, []byte(content), perm))
	require.NoError(t, os.Chmod(p, perm)) // whatever the umask
	return p
}

// listedAgents returns the names GET /v1/agents lists.
func listedAgents(t *testing.T, body string) []string {
	t.Helper()
	var resp struct {
		Agents []struct{ Name string } `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	var out []string
	for _, a := range resp.Agents {
		out = append(out, a.Name)
	}
	return out
}

// TestServeTakesTokensFromAFileOrTheEnvironmentAndRemovesThem is the
// regression test of security finding 9 (issue 11) for tokens: --token put
// them in every process listing, and COORFLOW_TOKENS stayed in the
// environment every child inherited.
func TestServeTakesTokensFromAFileOrTheEnvironmentAndRemovesThem(t *testing.T) {
	c := newCLI(t)
	file := tokenFile(t, "# who may call\nalice-token=alice\n\n  bob-token = bob  \n", 0o600)
	c.env = map[string]string{"COORFLOW_TOKENS": "env-token=carol", "COORFLOW_TOKEN": "other"}
	s := c.serve("../../examples/coor", "--token-file", file)
	assert.NotContains(t, c.env, "COORFLOW_TOKENS", "removed from the environment once read")
	assert.NotContains(t, c.env, "COORFLOW_TOKEN")
	code, _ := s.get("/v1/workflows", "alice-token")
	assert.Equal(t, http.StatusOK, code)
	code, _ = s.get("/v1/workflows", "bob-token")
	assert.Equal(t, http.StatusOK, code, "spaces around a line are trimmed")
	code, _ = s.get("/v1/workflows", "env-token")
	assert.Equal(t, http.StatusUnauthorized, code, "the file's tokens replace the environment's")
	exit, stderr := s.stop()
	assert.Equal(t, exitOK, exit)
	assert.Contains(t, stderr, "coorflow: serve: the tokens come from --token-file "+file+"; COORFLOW_TOKENS and COORFLOW_TOKEN are ignored\n")

	c.env = map[string]string{"COORFLOW_TOKENS": "env-token=carol, env-2=dave"}
	s = c.serve("../../examples/coor")
	assert.Empty(t, c.env)
	code, _ = s.get("/v1/workflows", "env-2")
	assert.Equal(t, http.StatusOK, code)
	exit, _ = s.stop()
	assert.Equal(t, exitOK, exit)
}

func TestServeRefusesTokensItCannotKeepSecret(t *testing.T) {
	c := newCLI(t)
	open := tokenFile(t, "tok=alice\n", 0o644)
	bad := tokenFile(t, "ok=alice\n# comment\n=bob\n", 0o600)
	spaced := tokenFile(t, "two words=alice\n", 0o600)
	twice := tokenFile(t, "tok=alice\ntok=bob\n", 0o600)
	empty := tokenFile(t, "# nothing yet\n\n", 0o600)
	missing := filepath.Join(t.TempDir(), "none")
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		stderr string
	}{
		{"token on the command line", []string{"--token", "s3cret=alice"}, map[string]string{"COORFLOW_TOKENS": "a=b"},
			"coorflow: serve: --token puts the token on the command line, where every user of this machine can read it (ps, /proc/PID/cmdline): " +
				"write TOKEN[=OWNER] lines to a file only you can read (chmod 600) and give --token-file FILE, or set COORFLOW_TOKENS"},
		{"file others can read", []string{"--token-file", open}, nil,
			"coorflow: serve: --token-file " + open + " can be read or written by other users (mode 0644): chmod 600 " + open},
		{"line without a token", []string{"--token-file", bad}, nil, "coorflow: serve: " + bad + ":3: want TOKEN or TOKEN=OWNER"},
		{"token with a space", []string{"--token-file", spaced}, nil, "coorflow: serve: " + spaced + ":1: a token cannot hold spaces"},
		{"one token, two owners", []string{"--token-file", twice}, nil, "coorflow: serve: " + twice + ":2: the same token is given to owners alice and bob"},
		{"file without tokens", []string{"--token-file", empty}, nil,
			"coorflow: serve: --token-file " + empty + " holds no token (want lines TOKEN or TOKEN=OWNER)"},
		{"no such file", []string{"--token-file", missing}, nil, "coorflow: serve: --token-file: open " + missing + ": no such file or directory"},
		{"bad entry in the environment", nil, map[string]string{"COORFLOW_TOKENS": "s3cret=alice,=bob"},
			"coorflow: serve: COORFLOW_TOKENS entry 2: want TOKEN or TOKEN=OWNER"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.env = tc.env
			code, _, stderr := c.run(append([]string{"serve"}, tc.args...)...)
			assert.Equal(t, exitUsage, code)
			assert.Equal(t, tc.stderr+"\n", stderr)
			assert.NotContains(t, stderr, "s3cret", "an error never shows a token")
			assert.NotContains(t, c.env, "COORFLOW_TOKENS", "removed even when serve stops")
		})
	}
	_, err := os.Stat(c.db)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was opened")
}

// TestAgentsListsTheCallersOwnRegistry is the regression test of security
// finding 8 (issue 11): GET /v1/agents listed the --owner registry to every
// caller, never the caller's own.
func TestAgentsListsTheCallersOwnRegistry(t *testing.T) {
	c := newCLI(t)
	code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput, "--owner", "alice")
	require.Equal(t, exitOK, code, stderr)
	s := c.serve("../../examples/coor", "--token-file", tokenFile(t, "a=alice\nb=bob\n", 0o600), "--owner", "bob")

	code, body := s.get("/v1/agents", "a")
	require.Equal(t, http.StatusOK, code, body)
	alice := listedAgents(t, body)
	assert.Contains(t, alice, "sqlite_analyst", "alice sees the agents her run built")
	assert.Contains(t, alice, "researcher", "and the built-in ones")
	code, body = s.get("/v1/agents", "b")
	require.Equal(t, http.StatusOK, code, body)
	bob := listedAgents(t, body)
	assert.NotContains(t, bob, "sqlite_analyst", "bob does not see alice's agents, --owner bob or not")
	assert.Contains(t, bob, "researcher")
}

// TestAProviderThatEchoesTheKeyLeavesNoSecretBehind is the regression test
// of security finding 9 (issue 11) for provider errors: the key a provider
// echoed in its error went to stderr and into the recorded run.
func TestAProviderThatEchoesTheKeyLeavesNoSecretBehind(t *testing.T) {
	const key = "org-key-SECRET-0123"
	srv := openaitest.NewServer(openaitest.Response{Status: http.StatusUnauthorized, Error: &openaitest.ErrorBody{
		Message: "Incorrect API key provided: " + key + " (Authorization: Bearer sk-test-SECRET-abcdef...)",
		Type:    "invalid_request_error", Code: "invalid_api_key"}})
	defer srv.Close()
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": srv.BaseURL()}
	code, stdout, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
	require.Equal(t, exitFailed, code, stderr)
	require.NotEmpty(t, srv.Requests(), "the provider was called")
	assert.Contains(t, stderr, "Incorrect API key provided: [redacted] (Authorization: Bearer [redacted])")
	assert.NotContains(t, stderr, "SECRET")
	assert.NotContains(t, stdout, "SECRET")

	runs := c.listRuns()
	require.Len(t, runs, 1)
	assert.Equal(t, trace.StatusError, runs[0].Status)
	assert.Contains(t, runs[0].Error, "[redacted]")
	code, show, _ := c.run("runs", "show", runs[0].ID, "--json")
	require.Equal(t, exitOK, code)
	assert.NotContains(t, show, "SECRET")
	files, err := filepath.Glob(c.db + "*")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "SECRET", "%s holds no secret: not the recorded run, not a checkpoint", f)
	}
}

func TestRunsPruneRemovesOldRunsByHand(t *testing.T) {
	c := newCLI(t)
	code, stdout, stderr := c.run("run", "../../examples/research", "--input", "How fast is SQLite?")
	require.Equal(t, exitInterrupted, code, stderr)
	code, stdout, stderr = c.run("run", "../../examples/research", "--thread", threadOf(t, stdout), "--resume", "accept")
	require.Equal(t, exitOK, code, stderr)
	second := runOf(t, stdout)
	runs := c.listRuns()
	require.Len(t, runs, 2)
	first := runs[1].ID
	require.NotEqual(t, second, first)

	code, stdout, stderr = c.run("runs", "prune", "--max-runs", "1", "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `^would remove 1 recorded run\(s\) \(0 for their age, 1 for the count\); 1 kept\n  `+first+`  default +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  count\n$`, stdout)
	assert.Len(t, c.listRuns(), 2, "a dry run removes nothing")

	code, stdout, stderr = c.run("runs", "prune", "--max-runs", "1", "--json")
	require.Equal(t, exitOK, code, stderr)
	var rep trace.PruneReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, first, rep.Runs[0].Run)
	assert.Equal(t, 1, rep.Kept)
	runs = c.listRuns()
	require.Len(t, runs, 1)
	assert.Equal(t, second, runs[0].ID, "the newest run is kept")
	code, _, stderr = c.run("runs", "show", first)
	assert.Equal(t, exitFailed, code)
	assert.Equal(t, "coorflow: no run "+first+" in "+c.db+" (coorflow runs list shows the recorded runs)\n", stderr)

	code, stdout, _ = c.run("runs", "prune")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "removed 0 recorded run(s); 1 kept\n", stdout, "the defaults keep a run of today")
	code, stdout, _ = c.run("runs", "prune", "--owner", "someone-else", "--max-runs", "1")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "removed 0 recorded run(s); 0 kept\n", stdout, "--owner prunes one owner's runs")

	for _, tc := range []struct{ args, stderr string }{
		{"--max-age 0", `coorflow: runs prune: invalid value "0" for flag -max-age: give a positive age such as 30d or 12h, or none for no limit; run coorflow help`},
		{"--max-age soon", `coorflow: runs prune: invalid value "soon" for flag -max-age: "soon" is not an age such as 30d or 12h; run coorflow help`},
		{"--max-age xd", `coorflow: runs prune: invalid value "xd" for flag -max-age: "xd" is not a number of days; run coorflow help`},
		{"--max-runs 0", `coorflow: runs prune: invalid value "0" for flag -max-runs: give a number of runs of at least 1, or none for no limit; run coorflow help`},
		{"r-1", "coorflow: runs prune takes no argument"},
	} {
		code, _, stderr := c.run(append([]string{"runs", "prune"}, strings.Fields(tc.args)...)...)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Equal(t, tc.stderr+"\n", stderr)
	}
	assert.Len(t, c.listRuns(), 1, "a bad command line removes nothing")
}

// TestServePrunesTheRecordedRunsAtStart is the regression test of security
// finding 6 (issue 11) for recorded runs: they were never pruned.
func TestServePrunesTheRecordedRunsAtStart(t *testing.T) {
	c := newCLI(t)
	for range 2 {
		code, _, stderr := c.run("run", "../../examples/coor", "--input", coorInput)
		require.Equal(t, exitOK, code, stderr)
	}
	require.Len(t, c.listRuns(), 2)
	s := c.serve("../../examples/coor", "--token-file", tokenFile(t, "t\n", 0o600), "--prune-max-runs", "1")
	exit, stderr := s.stop()
	assert.Equal(t, exitOK, exit)
	assert.Contains(t, stderr, "coorflow: pruned 1 recorded run(s) (0 for their age, 1 for the count); 1 kept\n")
	assert.Len(t, c.listRuns(), 1)

	s = c.serve("../../examples/coor", "--token-file", tokenFile(t, "t\n", 0o600), "--prune-max-runs", "1", "--prune-every", "none")
	exit, stderr = s.stop()
	assert.Equal(t, exitOK, exit)
	assert.NotContains(t, stderr, "pruned")
}
