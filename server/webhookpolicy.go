package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// webhookPolicy is Config.WebhookAllow parsed: a webhook URL is allowed
// when one entry has its scheme, host and port, and the entry's path is a
// whole-segment prefix of the URL's path. URLs whose paths could be read
// as another path by the server they reach — dot segments, encoded
// slashes or backslashes — are refused, so that what is compared is what
// is sent.
type webhookPolicy []webhookTarget

// webhookTarget is one entry of Config.WebhookAllow.
type webhookTarget struct {
	scheme, host, port string
	// path is the entry's path ("" allows every path); an entry that
	// ends in "/" allows the paths below it, another one the path itself
	// and those below it.
	path string
}

// parseWebhookAllow parses Config.WebhookAllow: each entry is an http or
// https URL with a host and no credentials, query or fragment.
func parseWebhookAllow(allow []string) (webhookPolicy, error) {
	var p webhookPolicy
	for _, raw := range allow {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("server: Config.WebhookAllow: %q: %w", raw, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return nil, fmt.Errorf("server: Config.WebhookAllow: %q must be an http or https URL with a host and without credentials, query or fragment", raw)
		}
		if err := checkWebhookPath(u); err != nil {
			return nil, fmt.Errorf("server: Config.WebhookAllow: %q: %w", raw, err)
		}
		p = append(p, webhookTarget{scheme: u.Scheme, host: strings.ToLower(u.Hostname()), port: webhookPort(u), path: u.Path})
	}
	return p, nil
}

// webhookPort is u's port, or its scheme's default.
func webhookPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// checkWebhookPath refuses a path that the server it reaches could read
// as another one: with "." or ".." segments (encoded or not), encoded
// slashes or backslashes, or backslashes.
func checkWebhookPath(u *url.URL) error {
	esc := strings.ToLower(u.EscapedPath())
	if strings.Contains(esc, "%2f") || strings.Contains(esc, "%5c") || strings.Contains(u.Path, `\`) {
		return errors.New("its path has an encoded slash or a backslash")
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		seg, _, _ = strings.Cut(seg, ";") // "..;" is ".." to some servers
		if seg == "." || seg == ".." {
			return errors.New("its path has a '.' or '..' segment")
		}
	}
	return nil
}

// allows reports whether u, a parsed http or https URL whose path passed
// checkWebhookPath, is under one of p's entries.
func (p webhookPolicy) allows(u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), webhookPort(u)
	for _, t := range p {
		if t.scheme == u.Scheme && t.host == host && t.port == port && underPath(u.Path, t.path) {
			return true
		}
	}
	return false
}

// underPath reports whether path is prefix, or lies below it segment by
// segment ("/a/b" lies below "/a" and "/a/", "/ab" below neither).
func underPath(path, prefix string) bool {
	if prefix == "" || prefix == "/" || path == prefix {
		return true
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return strings.HasPrefix(path, prefix)
}
