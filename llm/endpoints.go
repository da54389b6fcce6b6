package llm

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
)

// EnvAllowEndpoints lists the endpoints, besides each provider's own, that
// the API keys of a confined configuration may be sent to: origins
// ("https://llm.example.com", "http://127.0.0.1:8000"), separated by
// commas or spaces. Only the operator sets it: a workflow file cannot.
const EnvAllowEndpoints = "COORFLOW_ALLOW_ENDPOINTS"

// ErrEndpointNotAllowed is returned by New when a confined configuration
// would send a tier's API key to a base URL that is not its provider's
// endpoint, and the operator did not allow it.
var ErrEndpointNotAllowed = errors.New("llm: endpoint not allowed for the API key")

// originsOf returns the origins of provider p's own endpoints.
func originsOf(p Provider) []string {
	ps, _ := specOf(p)
	return ps.origins
}

// origin is the scheme, host and port of a URL, lower case and with the
// scheme's port made explicit: what decides where a request goes.
func origin(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port), true
}

// parseAllowed reads the origins of a COORFLOW_ALLOW_ENDPOINTS value;
// entries that are not http(s) URLs allow nothing.
func parseAllowed(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if o, ok := origin(f); ok {
			out = append(out, o)
		}
	}
	return out
}

// KeyMayGoTo reports whether a secret may be sent to rawURL, a URL
// someone other than the operator chose (a workflow file): its origin is
// one of own, the origins of the service the secret is for
// ("https://api.tavily.com"), or the operator allows it in
// COORFLOW_ALLOW_ENDPOINTS, read through getenv. It returns the origin.
func KeyMayGoTo(getenv func(string) string, rawURL string, own ...string) (string, bool) {
	o, ok := origin(rawURL)
	if !ok {
		return rawURL, false
	}
	allowed := parseAllowed(getenv(EnvAllowEndpoints))
	for _, u := range own {
		if uo, ok := origin(u); ok {
			allowed = append(allowed, uo)
		}
	}
	return o, slices.Contains(allowed, o)
}

// keyMayGo reports whether tier t's API key may be sent to its base URL:
// always for a configuration that is not confined; otherwise when the
// tier uses its provider's endpoint, the environment set its base URL, or
// the operator allowed the URL's origin. It returns the origin the key
// would go to.
func (c Config) keyMayGo(t Tier, mc ModelConfig) (string, bool) {
	if !c.Confined || mc.BaseURL == "" || c.endpoints[t] != "" {
		return "", true
	}
	o, ok := origin(mc.BaseURL)
	if !ok {
		return mc.BaseURL, false
	}
	return o, slices.Contains(originsOf(mc.Provider), o) || slices.Contains(c.AllowEndpoints, o)
}
