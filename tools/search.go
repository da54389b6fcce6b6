package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultSearchResults is how many results web_search returns unless
// configured otherwise (Deer-Flow's default).
const DefaultSearchResults = 3

// maxSnippetRunes caps each result's snippet in the text for the model.
const maxSnippetRunes = 500

// maxSearchResponse caps the bytes read from a search provider.
const maxSearchResponse = 4 << 20

var searchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"description":"What to search for."}},"required":["query"],"additionalProperties":false}`)

// A SearchResult is one hit of a web search.
type SearchResult struct {
	Title   string
	URL     string
	Snippet string
}

// A SearchProvider searches the web. Search returns at most n results,
// best first; n <= 0 means DefaultSearchResults.
type SearchProvider interface {
	Search(ctx context.Context, query string, n int) ([]SearchResult, error)
}

// WebSearchConfig configures the web_search tool.
type WebSearchConfig struct {
	// Provider runs the searches; required.
	Provider SearchProvider
	// MaxResults is how many results are shown; default DefaultSearchResults.
	MaxResults int
}

// WebSearch returns the "web_search" tool, which searches through the
// provider and returns the results as a numbered list of title, URL and
// snippet.
func WebSearch(cfg WebSearchConfig) Tool {
	if cfg.MaxResults <= 0 {
		cfg.MaxResults = DefaultSearchResults
	}
	return &searchTool{cfg: cfg}
}

type searchTool struct {
	cfg WebSearchConfig
}

func (s *searchTool) Name() string { return "web_search" }

func (s *searchTool) Description() string {
	return fmt.Sprintf("Searches the web and returns the top %d results (title, URL and snippet). "+
		"Use http_fetch on a result's URL to read the page.", s.cfg.MaxResults)
}

func (s *searchTool) Schema() json.RawMessage { return searchSchema }

func (s *searchTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(normalizeArgs(args), &in); err != nil {
		return "", &ArgumentError{Tool: "web_search", Schema: searchSchema, Problems: []ArgumentProblem{{Message: err.Error()}}}
	}
	if s.cfg.Provider == nil {
		return "", fmt.Errorf("tools: web_search: no search provider configured")
	}
	results, err := s.cfg.Provider.Search(ctx, in.Query, s.cfg.MaxResults)
	if err != nil {
		return "", err
	}
	if len(results) > s.cfg.MaxResults {
		results = results[:s.cfg.MaxResults]
	}
	return FormatResults(in.Query, results), nil
}

// FormatResults renders search results as the numbered list web_search
// returns.
func FormatResults(query string, results []SearchResult) string {
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q.", query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q:\n", query)
	for i, r := range results {
		title := shorten(r.Title, maxSnippetRunes)
		if title == "" {
			title = r.URL
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, title, r.URL)
		if snippet := shorten(r.Snippet, maxSnippetRunes); snippet != "" {
			b.WriteString("   " + snippet + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resultCount maps n <= 0 to the default.
func resultCount(n int) int {
	if n <= 0 {
		return DefaultSearchResults
	}
	return n
}

// doJSON sends req and decodes a 2xx JSON answer into out. source names the
// provider in errors.
func doJSON(client *http.Client, req *http.Request, source string, out any) error {
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("tools: %s: %w", source, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(source, resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxSearchResponse)).Decode(out); err != nil {
		return fmt.Errorf("tools: %s: decoding the response: %w", source, err)
	}
	return nil
}

// clientOr returns c, or a client without a timeout of its own: the
// context bounds each request.
func clientOr(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{}
}
