package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// corsPolicy answers the browser pages of the origins of
// Config.CORSOrigins (cross-origin resource sharing): a chat UI served
// from another origin than the API calls it with its token in a header.
// Without origins, the policy is closed: no page of another origin may
// read an answer (the browser's same-origin rule).
type corsPolicy map[string]bool

// corsMethods are the methods the API's routes take.
const corsMethods = "GET, POST, PUT, PATCH, DELETE"

// corsExposed are the headers of an answer a page may read besides the
// simple ones: the SDK reads Content-Location (the run a stream
// started), Location (where it re-attaches) and X-Pagination-Next (the
// next page of a search); X-Coorflow-Batch-Refused says which runs of a
// batch were not admitted.
const corsExposed = "Content-Location, Location, X-Coorflow-Batch-Refused, X-Pagination-Next, X-Request-Id"

// corsMaxAge is how long (seconds) a browser may keep a preflight's
// answer.
const corsMaxAge = "600"

// parseCORSOrigins reads Config.CORSOrigins: each an origin as browsers
// send it, scheme://host[:port] with scheme http or https and nothing
// after the host (no path, query, fragment or credentials). "*" is
// refused: every page of the web would be let in.
func parseCORSOrigins(origins []string) (corsPolicy, error) {
	p := corsPolicy{}
	for _, o := range origins {
		u, err := url.Parse(o)
		switch {
		case o == "*":
			return nil, fmt.Errorf("server: Config.CORSOrigins: %q would let every page of the web call the API; list the origins of the pages", o)
		case err != nil:
			return nil, fmt.Errorf("server: Config.CORSOrigins: %q: %w", o, err)
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil,
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
			return nil, fmt.Errorf("server: Config.CORSOrigins: %q is not an origin: give scheme://host[:port] (http or https), nothing after it", o)
		}
		p[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	return p, nil
}

// apply adds the CORS headers to the answer of a request from an allowed
// origin, and answers its preflight; it reports whether the request is
// answered (a preflight). /mcp is left out: it accepts only pages of its
// own origin (mcpSameOrigin).
func (p corsPolicy) apply(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if len(p) == 0 || origin == "" || r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/") {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if !p[strings.ToLower(origin)] {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Access-Control-Expose-Headers", corsExposed)
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		// Any header: a request is still authenticated by its token.
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}
