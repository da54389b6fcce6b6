package server

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"
)

// slashes are runs of slashes.
var slashes = regexp.MustCompile(`/+`)

// FuzzWebhookPolicy checks checkWebhook against an oracle of its own: a
// webhook it allows has the scheme, host and port of an allowed entry, a
// path that resolves to itself (no dot segments, nothing encoded that
// decodes to a separator) and lies below the entry's path segment by
// segment. It never panics.
//
//	go test -run '^$' -fuzz=FuzzWebhookPolicy -fuzztime=5s ./server
func FuzzWebhookPolicy(f *testing.F) {
	for _, seed := range [][2]string{
		{"http://127.0.0.1", "http://127.0.0.12/hook"},
		{"http://127.0.0.1:8080/hook/", "http://127.0.0.1:8080/hook/../admin"},
		{"http://127.0.0.1:8080/hook/", "http://127.0.0.1:8080/hook%2F..%2Fadmin"},
		{"http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hookx"},
		{"https://hooks.example.com/", "https://HOOKS.example.com:443/a/b?c=d#e"},
		{"https://hooks.example.com/a", "https://hooks.example.com/a/%2e%2e/b"},
		{"http://[::1]:9/x", "http://[::1]:9/x/y"},
		{"http://h/x", `http://h/x\..\y`},
		{"http://h/x", "http://h/x/..;/y"},
		{"http://h", "http://h@evil/x"},
		{"http://h", "http:/h/x"},
		{"http://h", "http://h:80/./x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, allow, raw string) {
		p, err := parseWebhookAllow([]string{allow})
		if err != nil {
			return
		}
		s := &Server{webhooks: p}
		if e := s.checkWebhook(raw); e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("checkWebhook(%q) under %q: %d %q", raw, allow, e.Status, e.Message)
			}
			return
		}
		a, _ := url.Parse(allow)
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("allowed %q, which does not parse: %v", raw, err)
		}
		if u.Scheme != a.Scheme || !strings.EqualFold(u.Hostname(), a.Hostname()) || webhookPort(u) != webhookPort(a) || u.User != nil {
			t.Fatalf("allowed %q under %q: another scheme, host or port", raw, allow)
		}
		esc := strings.ToLower(u.EscapedPath())
		if strings.Contains(esc, "%2f") || strings.Contains(esc, "%5c") || strings.Contains(u.Path, `\`) {
			t.Fatalf("allowed %q: an encoded separator", raw)
		}
		// Empty segments may be collapsed by the server reached; what is
		// left must have no dot segment.
		if p := slashes.ReplaceAllString(u.Path, "/"); p != "" && path.Clean(p) != strings.TrimSuffix(p, "/") && path.Clean(p) != p {
			t.Fatalf("allowed %q: its path %q is not clean (%q)", raw, u.Path, path.Clean(p))
		}
		if ap := strings.TrimSuffix(a.Path, "/"); ap != "" && u.Path != ap && !strings.HasPrefix(u.Path, ap+"/") {
			t.Fatalf("allowed %q: path %q is not below %q", raw, u.Path, a.Path)
		}
	})
}
