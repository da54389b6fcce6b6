package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

// fakeProvider answers every search with results, or err.
type fakeProvider struct {
	results []tools.SearchResult
	err     error
	gotN    int
	gotQ    string
}

func (f *fakeProvider) Search(_ context.Context, query string, n int) ([]tools.SearchResult, error) {
	f.gotQ, f.gotN = query, n
	return f.results, f.err
}

var fiveResults = []tools.SearchResult{
	{Title: "Go  generics\ntutorial", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Learn   how to\n use type parameters."},
	{Title: "", URL: "https://example.com/untitled", Snippet: ""},
	{Title: "Third", URL: "https://third.example/", Snippet: "three"},
	{Title: "Fourth", URL: "https://fourth.example/", Snippet: "four"},
	{Title: "Fifth", URL: "https://fifth.example/", Snippet: "five"},
}

func TestWebSearchReturnsANumberedList(t *testing.T) {
	p := &fakeProvider{results: fiveResults}
	res := tools.Run(t.Context(), tools.WebSearch(tools.WebSearchConfig{Provider: p}), json.RawMessage(`{"query":"go generics"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "go generics", p.gotQ)
	assert.Equal(t, 3, p.gotN, "Deer-Flow's default of 3 results")
	assert.Equal(t, `Results for "go generics":

1. Go generics tutorial
   https://go.dev/doc/tutorial/generics
   Learn how to use type parameters.

2. https://example.com/untitled
   https://example.com/untitled

3. Third
   https://third.example/
   three`, res.Output)
}

func TestWebSearchMaxResults(t *testing.T) {
	p := &fakeProvider{results: fiveResults}
	out, err := tools.WebSearch(tools.WebSearchConfig{Provider: p, MaxResults: 1}).Call(t.Context(), json.RawMessage(`{"query":"q"}`))
	require.NoError(t, err)
	assert.Equal(t, 1, p.gotN)
	assert.Equal(t, "Results for \"q\":\n\n1. Go generics tutorial\n   https://go.dev/doc/tutorial/generics\n   Learn how to use type parameters.", out)
}

func TestWebSearchFailures(t *testing.T) {
	tests := []struct {
		name     string
		provider tools.SearchProvider
		args     string
		status   tools.Status
		text     string
	}{
		{name: "no results", provider: &fakeProvider{}, args: `{"query":"xyzzy"}`, status: tools.StatusOK, text: `No results for "xyzzy".`},
		{name: "provider error", provider: &fakeProvider{err: errors.New("tools: searxng: connection refused")}, args: `{"query":"q"}`,
			status: tools.StatusFailed, text: `Error: tool "web_search" failed: searxng: connection refused`},
		{name: "no provider", args: `{"query":"q"}`, status: tools.StatusFailed,
			text: `Error: tool "web_search" failed: web_search: no search provider configured`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tools.Run(t.Context(), tools.WebSearch(tools.WebSearchConfig{Provider: tt.provider}), json.RawMessage(tt.args), tools.RunOptions{})
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.text, res.Text())
		})
	}
}

func TestWebSearchNeedsAQuery(t *testing.T) {
	res := tools.Run(t.Context(), tools.WebSearch(tools.WebSearchConfig{Provider: &fakeProvider{}}), json.RawMessage(`{"q":"go"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	var ae *tools.ArgumentError
	require.ErrorAs(t, res.Err, &ae)
	assert.Equal(t, []tools.ArgumentProblem{
		{Message: "missing properties: 'query'"},
		{Message: "additionalProperties 'q' not allowed"},
	}, ae.Problems)
}

// searxngAnswer is a trimmed SearXNG /search?format=json response.
const searxngAnswer = `{
  "query": "go generics",
  "number_of_results": 0,
  "results": [
    {"url": "https://go.dev/doc/tutorial/generics", "title": "Tutorial: Getting started with generics",
     "content": "This tutorial introduces the basics of generics in Go.", "engine": "duckduckgo",
     "parsed_url": ["https", "go.dev", "/doc/tutorial/generics", "", "", ""], "engines": ["duckduckgo"], "positions": [1], "score": 1.0, "category": "general"},
    {"url": "https://go.dev/blog/intro-generics", "title": "An Introduction To Generics",
     "content": "This blog post is based on our talk at GopherCon 2021.", "engine": "google", "score": 0.5, "category": "general"},
    {"url": "https://example.com/third", "title": "Third", "content": "", "engine": "bing", "score": 0.1, "category": "general"}
  ],
  "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["go generics example"], "unresponsive_engines": []
}`

func TestSearXNGProvider(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/searx/search" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		q := r.URL.Query()
		if q.Get("q") != "go generics" || q.Get("format") != "json" || q.Get("language") != "en" {
			http.Error(w, "unexpected query "+r.URL.RawQuery, http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, searxngAnswer)
	})
	p := tools.NewSearXNG(tools.SearXNGConfig{BaseURL: srv.URL + "/searx/", Language: "en"})

	got, err := p.Search(t.Context(), "go generics", 2)
	require.NoError(t, err)
	assert.Equal(t, []tools.SearchResult{
		{Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "This tutorial introduces the basics of generics in Go."},
		{Title: "An Introduction To Generics", URL: "https://go.dev/blog/intro-generics", Snippet: "This blog post is based on our talk at GopherCon 2021."},
	}, got)

	got, err = p.Search(t.Context(), "go generics", 0)
	require.NoError(t, err)
	assert.Len(t, got, 3, "n <= 0 means the default of 3")
}

func TestSearXNGProviderErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string
	}{
		{name: "server error", status: http.StatusInternalServerError, body: "engine crashed",
			wantErr: "tools: searxng: GET SRV/search?format=json&q=go returned 500 Internal Server Error: engine crashed"},
		{name: "json format disabled", status: http.StatusForbidden, body: "Forbidden",
			wantErr: "tools: searxng: GET SRV/search?format=json&q=go returned 403 Forbidden: Forbidden (is the json format enabled in the instance's settings.yml, search.formats?)"},
		{name: "not json", status: http.StatusOK, body: "<html>hello</html>",
			wantErr: "tools: searxng: decoding the response: invalid character '<' looking for beginning of value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := tools.NewSearXNG(tools.SearXNGConfig{BaseURL: srv.URL}).Search(t.Context(), "go", 3)
			assert.EqualError(t, err, replaceSRV(tt.wantErr, srv.URL))
			if tt.status != http.StatusOK {
				var se *tools.HTTPStatusError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, tt.status, se.StatusCode)
			}
		})
	}
	_, err := tools.NewSearXNG(tools.SearXNGConfig{}).Search(t.Context(), "go", 3)
	assert.EqualError(t, err, "tools: searxng: no base URL configured")
}

// tavilyAnswer is a trimmed Tavily /search response.
const tavilyAnswer = `{
  "query": "go generics",
  "follow_up_questions": null,
  "answer": null,
  "images": [],
  "results": [
    {"title": "Tutorial: Getting started with generics", "url": "https://go.dev/doc/tutorial/generics",
     "content": "This tutorial introduces the basics of generics in Go.", "score": 0.98, "raw_content": null},
    {"title": "An Introduction To Generics", "url": "https://go.dev/blog/intro-generics",
     "content": "This blog post is based on our talk at GopherCon 2021.", "score": 0.91, "raw_content": null}
  ],
  "response_time": 1.09
}`

func TestTavilyProvider(t *testing.T) {
	var gotBody map[string]any
	var gotAuth string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		gotAuth = r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&gotBody); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, tavilyAnswer)
	})
	p := tools.NewTavily(tools.TavilyConfig{APIKey: "tvly-test", BaseURL: srv.URL})

	got, err := p.Search(t.Context(), "go generics", 0)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"api_key": "tvly-test", "query": "go generics", "max_results": float64(3),
		"search_depth": "basic", "topic": "general",
	}, gotBody)
	assert.Equal(t, "Bearer tvly-test", gotAuth)
	assert.Equal(t, []tools.SearchResult{
		{Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "This tutorial introduces the basics of generics in Go."},
		{Title: "An Introduction To Generics", URL: "https://go.dev/blog/intro-generics", Snippet: "This blog post is based on our talk at GopherCon 2021."},
	}, got)
}

func TestTavilyProviderErrors(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"detail": {"error": "Unauthorized: missing or invalid API key."}}`)
	})
	_, err := tools.NewTavily(tools.TavilyConfig{APIKey: "wrong", BaseURL: srv.URL}).Search(t.Context(), "go", 3)
	var se *tools.HTTPStatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusUnauthorized, se.StatusCode)
	assert.EqualError(t, err, `tools: tavily: POST `+srv.URL+`/search returned 401 Unauthorized: {"detail": {"error": "Unauthorized: missing or invalid API key."}}`)

	_, err = tools.NewTavily(tools.TavilyConfig{}).Search(t.Context(), "go", 3)
	assert.EqualError(t, err, "tools: tavily: no API key configured")
}

// roundTripFunc lets a test answer requests without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTavilyDefaultBaseURL(t *testing.T) {
	var got string
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Method + " " + r.URL.String()
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(tavilyAnswer)), Request: r}, nil
	})}
	_, err := tools.NewTavily(tools.TavilyConfig{APIKey: "k", Client: client}).Search(t.Context(), "go", 3)
	require.NoError(t, err)
	assert.Equal(t, "POST https://api.tavily.com/search", got)
}

func TestWebSearchThroughSearXNG(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, searxngAnswer)
	})
	reg, err := tools.NewRegistry(tools.WebSearch(tools.WebSearchConfig{Provider: tools.NewSearXNG(tools.SearXNGConfig{BaseURL: srv.URL})}))
	require.NoError(t, err)
	res := reg.Run(t.Context(), "web_search", json.RawMessage(`{"query":"go generics"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, `Results for "go generics":

1. Tutorial: Getting started with generics
   https://go.dev/doc/tutorial/generics
   This tutorial introduces the basics of generics in Go.

2. An Introduction To Generics
   https://go.dev/blog/intro-generics
   This blog post is based on our talk at GopherCon 2021.

3. Third
   https://example.com/third`, res.Output)
}

func replaceSRV(s, srv string) string { return strings.ReplaceAll(s, "SRV", srv) }
