package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// SearXNGConfig configures a SearXNG provider.
type SearXNGConfig struct {
	// BaseURL is the instance's address, e.g. "http://localhost:8888";
	// required. The instance must allow the json format (search.formats in
	// its settings.yml).
	BaseURL string
	// Client sends the requests; default a plain http.Client.
	Client *http.Client
	// Language and Categories are passed through when set ("en", "general").
	Language   string
	Categories string
}

// SearXNG searches through a SearXNG instance's JSON API
// (GET /search?q=...&format=json). It returns at most one page of results.
type SearXNG struct {
	cfg    SearXNGConfig
	client *http.Client
}

// NewSearXNG returns a provider for the instance at cfg.BaseURL.
func NewSearXNG(cfg SearXNGConfig) *SearXNG {
	return &SearXNG{cfg: cfg, client: clientOr(cfg.Client)}
}

type searxngResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

// Search implements SearchProvider.
func (s *SearXNG) Search(ctx context.Context, query string, n int) ([]SearchResult, error) {
	if s.cfg.BaseURL == "" {
		return nil, errors.New("tools: searxng: no base URL configured")
	}
	q := url.Values{"q": {query}, "format": {"json"}}
	if s.cfg.Language != "" {
		q.Set("language", s.cfg.Language)
	}
	if s.cfg.Categories != "" {
		q.Set("categories", s.cfg.Categories)
	}
	endpoint := strings.TrimSuffix(s.cfg.BaseURL, "/") + "/search?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("tools: searxng: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	var resp searxngResponse
	if err := doJSON(s.client, req, "searxng", &resp); err != nil {
		var se *HTTPStatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusForbidden {
			return nil, fmt.Errorf("%w (is the json format enabled in the instance's settings.yml, search.formats?)", err)
		}
		return nil, err
	}
	out := make([]SearchResult, 0, min(len(resp.Results), resultCount(n)))
	for _, r := range resp.Results {
		if len(out) == resultCount(n) {
			break
		}
		out = append(out, SearchResult{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}
