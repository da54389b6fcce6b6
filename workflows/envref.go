package workflows

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// envRef matches ${NAME} and ${NAME:-default}.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// envPaths are the only entries where ${ENV} may appear: endpoints and
// secrets.
var envPaths = regexp.MustCompile(`^(models\.(basic|reasoning|vision|code)\.base_url|tools\.web_search\.(base_url|api_key))$`)

// endpointPath are the entries of envPaths that are URLs: a reference
// may only begin them.
var endpointPath = regexp.MustCompile(`\.base_url$`)

// keyEnvPath is where a file names the variable holding a tier's key.
var keyEnvPath = regexp.MustCompile(`^models\.(basic|reasoning|vision|code)\.api_key_env$`)

// defaultAllowedEnv are the environment variables a workflow file may
// read (in ${NAME} and api_key_env) without being allowed: the names
// that conventionally hold a provider's key or endpoint. A pattern's *
// stands for any characters.
var defaultAllowedEnv = []string{"*_API_KEY", "*_BASE_URL", "OLLAMA_HOST", "SEARXNG_URL"}

// WithAllowedEnv lets the file read the environment variables named
// (patterns: * stands for any characters) besides the default ones:
// *_API_KEY, *_BASE_URL, OLLAMA_HOST and SEARXNG_URL. A file
// that reads any other variable does not load: it could send a secret
// of the process, such as AWS_SECRET_ACCESS_KEY, to an endpoint of its
// choosing.
func WithAllowedEnv(names ...string) LoadOption {
	return func(o *loadOptions) { o.allowEnv = append(o.allowEnv, names...) }
}

// envAllowed reports whether the file may read variable name.
func (o *loadOptions) envAllowed(name string) bool {
	return matchesAny(defaultAllowedEnv, name) || o.trusted(name)
}

// trusted reports whether the program that loads the file allowed it
// variable name (WithAllowedEnv), beyond the default ones.
func (o *loadOptions) trusted(name string) bool { return matchesAny(o.allowEnv, name) }

func matchesAny(patterns []string, name string) bool {
	for _, pattern := range patterns {
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

// checkEnvRefs reports ${...} outside endpoints and secrets, malformed
// references inside them, and environment variables the file may not
// read.
func (f *File) checkEnvRefs(ps *problems) {
	d := f.doc
	for ptr, l := range d.at {
		s, ok := lookupValue(d.value, ptr).(string)
		if !ok {
			continue
		}
		if keyEnvPath.MatchString(l.path) {
			if !f.opts.envAllowed(s) {
				ps.at(l.val, l.path, "api_key_env names environment variable %s, %s", s, notAllowed(s))
			}
			continue
		}
		if !strings.Contains(s, "${") {
			continue
		}
		if !envPaths.MatchString(l.path) {
			ps.at(l.val, l.path, "${...} is allowed only in endpoints and secrets (models.<tier>.base_url, tools.web_search.base_url, tools.web_search.api_key); write the value itself here")
			continue
		}
		if rest := envRef.ReplaceAllString(s, ""); strings.Contains(rest, "${") {
			ps.at(l.val, l.path, "malformed reference in %q: write ${NAME} or ${NAME:-default}", s)
		}
		for _, m := range envRef.FindAllStringSubmatchIndex(s, -1) {
			name := s[m[2]:m[3]]
			line := strings.Count(s[:m[0]], "\n")
			col := m[0] - (strings.LastIndexByte(s[:m[0]], '\n') + 1)
			switch {
			case !f.opts.envAllowed(name):
				ps.at(d.textPos(l.node, line, col), l.path, "%s reads environment variable %s, %s", s[m[0]:m[1]], name, notAllowed(name))
			case m[0] > 0 && endpointPath.MatchString(l.path) && !f.opts.trusted(name):
				// Inside a URL the file chose, a variable allowed by
				// default (a key) would be carried to wherever the file
				// points.
				ps.at(d.textPos(l.node, line, col), l.path, "%s is inside the URL: an endpoint may read a variable only at its beginning "+
					"(${NAME} or ${NAME:-default}, then a path), so that the variable decides where requests go, never what they carry; "+
					"if you trust this file with %s, allow it (coorflow --allow-env %s, workflows.WithAllowedEnv)", s[m[0]:m[1]], name, name)
			}
		}
	}
}

// notAllowed explains why a file may not read variable name, and how to
// let it.
func notAllowed(name string) string {
	return fmt.Sprintf("which a workflow file may not read: only %s are allowed unless the program that loads the file allows more; "+
		"if you trust this file with %s, allow it (coorflow --allow-env %s, workflows.WithAllowedEnv)", strings.Join(defaultAllowedEnv, ", "), name, name)
}

// expandEnv replaces ${NAME} and ${NAME:-default} with the environment's
// values and returns the names that were unset and had no default.
func expandEnv(s string, getenv func(string) string) (string, []string) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := envRef.FindStringSubmatch(m)
		if v := getenv(sub[1]); v != "" {
			return v
		}
		if sub[2] != "" {
			return sub[3]
		}
		missing = append(missing, sub[1])
		return ""
	})
	return out, missing
}

// unsetError says which variables an entry needs.
func unsetError(what string, missing []string) error {
	return fmt.Errorf("workflows: %s: environment variable %s is not set", what, strings.Join(missing, ", "))
}
