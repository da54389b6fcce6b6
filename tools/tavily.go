package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// DefaultTavilyURL is Tavily's API address.
const DefaultTavilyURL = "https://api.tavily.com"

// TavilyConfig configures a Tavily provider.
type TavilyConfig struct {
	// APIKey is the Tavily key; required.
	APIKey string
	// BaseURL defaults to DefaultTavilyURL.
	BaseURL string
	// Client sends the requests; default a plain http.Client.
	Client *http.Client
	// SearchDepth is "basic" (default) or "advanced".
	SearchDepth string
	// Topic is "general" (default) or "news".
	Topic string
}

// Tavily searches through Tavily's API (POST /search). The key travels in
// the request body as api_key, and as a bearer token for the newer API.
type Tavily struct {
	cfg    TavilyConfig
	client *http.Client
}

// NewTavily returns a Tavily provider.
func NewTavily(cfg TavilyConfig) *Tavily {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultTavilyURL
	}
	if cfg.SearchDepth == "" {
		cfg.SearchDepth = "basic"
	}
	if cfg.Topic == "" {
		cfg.Topic = "general"
	}
	return &Tavily{cfg: cfg, client: clientOr(cfg.Client)}
}

type tavilyRequest struct {
	APIKey      string `json:"api_key"`
	Query       string `json:"query"`
	MaxResults  int    `json:"max_results"`
	SearchDepth string `json:"search_depth"`
	Topic       string `json:"topic"`
}

type tavilyResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

// Search implements SearchProvider.
func (t *Tavily) Search(ctx context.Context, query string, n int) ([]SearchResult, error) {
	if t.cfg.APIKey == "" {
		return nil, errors.New("tools: tavily: no API key configured")
	}
	body, err := json.Marshal(tavilyRequest{
		APIKey: t.cfg.APIKey, Query: query, MaxResults: resultCount(n),
		SearchDepth: t.cfg.SearchDepth, Topic: t.cfg.Topic,
	})
	if err != nil {
		return nil, fmt.Errorf("tools: tavily: %w", err)
	}
	endpoint := strings.TrimSuffix(t.cfg.BaseURL, "/") + "/search"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("tools: tavily: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	var resp tavilyResponse
	if err := doJSON(t.client, req, "tavily", &resp); err != nil {
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
