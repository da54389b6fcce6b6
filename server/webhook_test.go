package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/server"
)

// TestWebhookAllowComparesParsedURLs: an entry of Config.WebhookAllow
// allows its scheme, host, port and the paths below its own, segment by
// segment; a string prefix is not enough (issue 26, finding 11), and
// paths that another server could read as a path elsewhere are refused.
func TestWebhookAllowComparesParsedURLs(t *testing.T) {
	paths := make(chan string, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.EscapedPath()
	}))
	defer hook.Close()
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), WebhookAllow: []string{hook.URL + "/hook/", "http://127.0.0.1"}})
	id := e.platformThread(alice, nil)
	run := func(webhook string, status int, out any) {
		t.Helper()
		e.call("POST", "/threads/"+id+"/runs/wait", alice, map[string]any{"assistant_id": "echo", "input": map[string]any{"text": "a"},
			"webhook": webhook}, status, out)
	}

	for _, c := range []struct{ webhook, message string }{
		{"http://127.0.0.12/hook/x", `webhook "http://127.0.0.12/hook/x" is not under a URL prefix this server allows (--webhook-allow)`},
		{"http://127.0.0.1.evil.example/x", `webhook "http://127.0.0.1.evil.example/x" is not under a URL prefix this server allows (--webhook-allow)`},
		{"https://127.0.0.1/x", `webhook "https://127.0.0.1/x" is not under a URL prefix this server allows (--webhook-allow)`},
		{hook.URL + "/hookx", `webhook "` + hook.URL + `/hookx" is not under a URL prefix this server allows (--webhook-allow)`},
		{hook.URL + "/hook/../admin", `webhook "` + hook.URL + `/hook/../admin" is refused: its path has a '.' or '..' segment`},
		{hook.URL + "/hook/%2e%2E/admin", `webhook "` + hook.URL + `/hook/%2e%2E/admin" is refused: its path has a '.' or '..' segment`},
		{hook.URL + "/hook/..;/admin", `webhook "` + hook.URL + `/hook/..;/admin" is refused: its path has a '.' or '..' segment`},
		{hook.URL + "/hook%2F..%2Fadmin", `webhook "` + hook.URL + `/hook%2F..%2Fadmin" is refused: its path has an encoded slash or a backslash`},
		{hook.URL + "/hook/a%5c..%5cadmin", `webhook "` + hook.URL + `/hook/a%5c..%5cadmin" is refused: its path has an encoded slash or a backslash`},
	} {
		var refused server.ErrorBody
		run(c.webhook, http.StatusBadRequest, &refused)
		assert.Equal(t, server.ErrorDetail{Code: server.CodeInvalidField, Field: "webhook", Message: c.message}, refused.Error, c.webhook)
	}

	var out map[string]any
	run(hook.URL+"/hook/done", http.StatusOK, &out)
	assert.Equal(t, "/hook/done", <-paths)
	require.NoError(t, e.srv.Shutdown(t.Context())) // every webhook call has ended
	close(paths)
	for p := range paths {
		t.Errorf("a refused webhook was called: %s", p)
	}
}

// TestWebhookAllowEntriesAreChecked: New refuses an entry that is not an
// http or https URL of a host, or whose path escapes itself.
func TestWebhookAllowEntriesAreChecked(t *testing.T) {
	for allow, want := range map[string]string{
		"hooks.example.com":                `server: Config.WebhookAllow: "hooks.example.com" must be an http or https URL with a host and without credentials, query or fragment`,
		"ftp://hooks.example.com/":         `server: Config.WebhookAllow: "ftp://hooks.example.com/" must be an http or https URL with a host and without credentials, query or fragment`,
		"https://u:p@hooks.example.com":    `server: Config.WebhookAllow: "https://u:p@hooks.example.com" must be an http or https URL with a host and without credentials, query or fragment`,
		"https://hooks.example.com/?a=1":   `server: Config.WebhookAllow: "https://hooks.example.com/?a=1" must be an http or https URL with a host and without credentials, query or fragment`,
		"https://hooks.example.com/a/../b": `server: Config.WebhookAllow: "https://hooks.example.com/a/../b": its path has a '.' or '..' segment`,
	} {
		_, err := server.New(server.Config{Workflows: workflows(echoGraph(t)), Saver: memory.New(), Tokens: tokens, WebhookAllow: []string{allow}})
		require.Error(t, err, allow)
		assert.Equal(t, want, err.Error())
	}
}
