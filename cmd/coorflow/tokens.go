package main

import (
	"fmt"
	"github.com/coorflow/coorflow/store"
	"io"
	"os"
	"strings"
)

// The environment variables serve reads its bearer tokens from, once, and
// then removes from its environment.
const (
	envTokens = "COORFLOW_TOKENS" // "tok=owner,tok2=owner2"
	envToken  = "COORFLOW_TOKEN"  // one token, owner "default"
)

// errTokenOnCommandLine refuses --token: the command line of a process is
// readable by every user of the machine.
const errTokenOnCommandLine = "serve: --token puts the token on the command line, where every user of this machine can read it " +
	"(ps, /proc/PID/cmdline): write TOKEN[=OWNER] lines to a file only you can read (chmod 600) and give --token-file FILE, or set " + envTokens

// tokens returns the bearer tokens of serve and their owners: from the
// --token-file file, else $COORFLOW_TOKENS, else $COORFLOW_TOKEN. Both
// variables are removed from the environment whatever happens, so that
// nothing serve starts inherits them. Tokens on the command line are
// refused.
func (a *app) tokens(file string, cmdline []string) (map[string]string, error) {
	many, one := a.getenv(envTokens), a.getenv(envToken)
	if a.unsetenv != nil {
		for _, name := range []string{envTokens, envToken} {
			if err := a.unsetenv(name); err != nil {
				a.notice("%v", err)
			}
		}
	}
	if len(cmdline) > 0 {
		return nil, usagef("%s", errTokenOnCommandLine)
	}
	switch {
	case file != "":
		if many != "" || one != "" {
			a.notice("serve: the tokens come from --token-file %s; %s and %s are ignored", file, envTokens, envToken)
		}
		return readTokenFile(file)
	case many != "":
		return parseTokens(strings.Split(many, ","), func(i int) string { return fmt.Sprintf("%s entry %d", envTokens, i+1) })
	case one != "":
		return parseTokens([]string{one}, func(int) string { return envToken })
	}
	return nil, usagef("serve: every request needs a bearer token: give --token-file FILE (lines TOKEN or TOKEN=OWNER), or set %s or %s", envTokens, envToken)
}

// readTokenFile reads a file of TOKEN or TOKEN=OWNER lines; blank lines
// and lines starting with # are skipped. A file other users can read or
// write is refused.
func readTokenFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("serve: --token-file: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, usagef("serve: --token-file: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, usagef("serve: --token-file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, usagef("serve: --token-file %s can be read or written by other users (mode %04o): chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, usagef("serve: --token-file: %v", err)
	}
	var entries []string
	var lines []int
	for i, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			entries, lines = append(entries, l), append(lines, i+1)
		}
	}
	if len(entries) == 0 {
		return nil, usagef("serve: --token-file %s holds no token (want lines TOKEN or TOKEN=OWNER)", path)
	}
	return parseTokens(entries, func(i int) string { return fmt.Sprintf("%s:%d", path, lines[i]) })
}

// parseTokens reads TOKEN or TOKEN=OWNER entries (owner "default" when
// none is given). where names entry i in errors, which never show a
// token.
func parseTokens(entries []string, where func(i int) string) (map[string]string, error) {
	out := map[string]string{}
	for i, e := range entries {
		tok, owner, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok {
			owner = "default"
		}
		tok, owner = strings.TrimSpace(tok), strings.TrimSpace(owner)
		switch {
		case tok == "" || owner == "":
			return nil, usagef("serve: %s: want TOKEN or TOKEN=OWNER", where(i))
		case strings.ContainsFunc(tok, isSpace):
			return nil, usagef("serve: %s: a token cannot hold spaces", where(i))
		case store.CheckOwner(owner) != nil:
			return nil, usagef("serve: %s: owner %q is not a valid owner id (at most %d bytes of text without control characters)", where(i), owner, store.MaxOwnerLen)
		}
		if prev, dup := out[tok]; dup && prev != owner {
			return nil, usagef("serve: %s: the same token is given to owners %s and %s", where(i), prev, owner)
		}
		out[tok] = owner
	}
	return out, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }
