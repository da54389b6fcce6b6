package workflows

import (
	"fmt"
	"regexp"
	"strings"
)

// envRef matches ${NAME} and ${NAME:-default}.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// envPaths are the only entries where ${ENV} may appear: endpoints and
// secrets.
var envPaths = regexp.MustCompile(`^(models\.(basic|reasoning|vision|code)\.base_url|tools\.web_search\.(base_url|api_key))$`)

// checkEnvRefs reports ${...} outside endpoints and secrets, and malformed
// references inside them.
func (d *document) checkEnvRefs(ps *problems) {
	for ptr, l := range d.at {
		s, ok := lookupValue(d.value, ptr).(string)
		if !ok || !strings.Contains(s, "${") {
			continue
		}
		if !envPaths.MatchString(l.path) {
			ps.at(l.val, l.path, "${...} is allowed only in endpoints and secrets (models.<tier>.base_url, tools.web_search.base_url, tools.web_search.api_key); write the value itself here")
			continue
		}
		if rest := envRef.ReplaceAllString(s, ""); strings.Contains(rest, "${") {
			ps.at(l.val, l.path, "malformed reference in %q: write ${NAME} or ${NAME:-default}", s)
		}
	}
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
