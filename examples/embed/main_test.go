package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/checkpoint/memory"
)

func TestTheServiceTriagesTicketsThroughTheHTTPAPI(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("COORFLOW_MODEL", "")
	srv, err := newService(t.Context(), "workflow.yaml", memory.New(), map[string]string{"tok": "acme"})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer func() { _ = srv.Shutdown(t.Context()) }()

	post := func(path, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct{ thread, ticket, reply string }{
		{"t1", "Where is my order 42?", `"reply":"Your order 42 shipped yesterday and arrives on Friday."`},
		{"t2", "The app crashes on start", `"reply":"We opened incident INC-24; an engineer will contact you today."`},
	} {
		code, body := post("/v1/threads", `{"workflow": "triage", "thread_id": "`+c.thread+`"}`)
		require.Equal(t, http.StatusCreated, code, body)
		code, body = post("/v1/threads/"+c.thread+"/runs/wait", `{"input": {"ticket": "`+c.ticket+`"}}`)
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, `"status":"done"`)
		assert.Contains(t, body, c.reply)
	}
}
