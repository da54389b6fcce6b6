package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

// Defaults of HTTPFetchConfig.
const (
	DefaultFetchTimeout  = 20 * time.Second
	DefaultFetchMaxBody  = 1 << 20
	DefaultFetchMaxText  = 64 << 10
	DefaultFetchAgent    = "coorflow-http-fetch/1"
	maxFetchRedirects    = 5
	statusSnippetRunes   = 300
	statusSnippetMaxBody = 16 << 10
)

var fetchSchema = json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","minLength":1,"description":"The http or https URL to fetch."}},"required":["url"],"additionalProperties":false}`)

// HTTPFetchConfig configures the http_fetch tool. The zero value fetches
// any public host.
type HTTPFetchConfig struct {
	// Timeout bounds one fetch, redirects included; default DefaultFetchTimeout.
	Timeout time.Duration
	// MaxBodyBytes caps the bytes read from the response body; default
	// DefaultFetchMaxBody. A longer body is cut and the text says so.
	MaxBodyBytes int64
	// MaxTextBytes caps the text returned; default DefaultFetchMaxText.
	MaxTextBytes int
	// AllowHosts, when not empty, lists the only hosts that may be fetched.
	// An entry matches the host itself and its subdomains
	// ("example.com" matches "docs.example.com"); addresses match exactly.
	AllowHosts []string
	// DenyHosts lists hosts that may not be fetched, matched like
	// AllowHosts. Deny wins over allow.
	DenyHosts []string
	// AllowPrivate permits loopback, private, link-local and other
	// non-public addresses. By default they are refused, whether written in
	// the URL or reached through a name, so that a model cannot reach
	// services inside the network (such as a cloud metadata endpoint).
	AllowPrivate bool
	// UserAgent is sent with each request; default DefaultFetchAgent.
	UserAgent string
}

// HTTPFetch returns the "http_fetch" tool: it GETs a URL and returns the
// final URL, the page title and its readable text. HTML is reduced to text
// (scripts, styles and navigation dropped, headings and list items marked,
// links followed by their URL, whitespace collapsed); text, JSON and XML are
// returned as they are; other content types are an error. A status other
// than 2xx is an *HTTPStatusError; a refused host is a *HostDeniedError.
// Environment proxies are not used.
func HTTPFetch(cfg HTTPFetchConfig) TimeoutTool {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultFetchTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultFetchMaxBody
	}
	if cfg.MaxTextBytes <= 0 {
		cfg.MaxTextBytes = DefaultFetchMaxText
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultFetchAgent
	}
	f := &fetchTool{cfg: cfg, policy: newHostPolicy(cfg.AllowHosts, cfg.DenyHosts, cfg.AllowPrivate)}
	f.client = &http.Client{
		Transport: &http.Transport{
			DialContext:         f.policy.newDialer().DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConns:        10,
			IdleConnTimeout:     30 * time.Second,
			ForceAttemptHTTP2:   true,
		},
		CheckRedirect: f.checkRedirect,
	}
	return f
}

type fetchTool struct {
	cfg    HTTPFetchConfig
	policy hostPolicy
	client *http.Client
}

func (f *fetchTool) Name() string { return "http_fetch" }

func (f *fetchTool) Description() string {
	return "Fetches a web page or document by URL and returns its readable text " +
		"(HTML is converted to plain text; links are shown as text followed by their URL in parentheses)."
}

func (f *fetchTool) Schema() json.RawMessage { return fetchSchema }

func (f *fetchTool) Timeout() time.Duration { return f.cfg.Timeout }

func (f *fetchTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(normalizeArgs(args), &in); err != nil {
		return "", &ArgumentError{Tool: "http_fetch", Schema: fetchSchema, Problems: []ArgumentProblem{{Message: err.Error()}}}
	}
	u, err := f.parseURL(in.URL)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("tools: http_fetch: %w", err)
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", f.requestError(ctx, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", statusError("http_fetch", resp)
	}
	return f.render(resp)
}

// parseURL accepts absolute http and https URLs whose host the policy allows.
func (f *fetchTool) parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("tools: http_fetch: invalid URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("tools: http_fetch: invalid URL %q: only http and https URLs can be fetched", raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("tools: http_fetch: invalid URL %q: no host", raw)
	}
	if err := f.policy.check(u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// checkRedirect applies the URL rules to every redirect target.
func (f *fetchTool) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxFetchRedirects {
		// Wrapped by requestError, which adds the prefix and the URL.
		return fmt.Errorf("stopped after %d redirects", maxFetchRedirects)
	}
	_, err := f.parseURL(req.URL.String())
	return err
}

// requestError explains why a request got no response.
func (f *fetchTool) requestError(ctx context.Context, u *url.URL, err error) error {
	var denied *HostDeniedError
	if errors.As(err, &denied) {
		return denied
	}
	var private *privateAddrError
	if errors.As(err, &private) {
		host := u.Hostname()
		var ue *url.Error
		if errors.As(err, &ue) {
			if failed, perr := url.Parse(ue.URL); perr == nil {
				host = failed.Hostname()
			}
		}
		return &HostDeniedError{Host: host, Reason: fmt.Sprintf("it resolves to %s, a private or loopback address", private.addr)}
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return fmt.Errorf("tools: http_fetch: GET %s: no answer within %s: %w", redact(u), f.cfg.Timeout, context.DeadlineExceeded)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("tools: http_fetch: GET %s: %w", redact(u), err)
}

// render turns a 2xx response into text for the model.
func (f *fetchTool) render(resp *http.Response) (string, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBodyBytes+1))
	if err != nil {
		return "", fmt.Errorf("tools: http_fetch: GET %s: reading the body: %w", redact(resp.Request.URL), err)
	}
	bodyCut := int64(len(body)) > f.cfg.MaxBodyBytes
	if bodyCut {
		body = body[:f.cfg.MaxBodyBytes]
	}
	mediaType, contentType := mediaTypeOf(resp.Header.Get("Content-Type"), body)
	var title, text string
	switch {
	case isHTML(mediaType):
		title, text, err = htmlToText(decodeCharset(body, contentType), resp.Request.URL)
		if err != nil {
			return "", fmt.Errorf("tools: http_fetch: GET %s: parsing HTML: %w", redact(resp.Request.URL), err)
		}
	case isText(mediaType):
		text, err = readAllString(decodeCharset(body, contentType))
		if err != nil {
			return "", fmt.Errorf("tools: http_fetch: GET %s: decoding the text: %w", redact(resp.Request.URL), err)
		}
	default:
		return "", fmt.Errorf("tools: http_fetch: GET %s returned %s content, which cannot be read as text",
			redact(resp.Request.URL), mediaType)
	}
	return f.format(resp.Request.URL, title, text, bodyCut), nil
}

// format lays out the page for the model.
func (f *fetchTool) format(u *url.URL, title, text string, bodyCut bool) string {
	var b strings.Builder
	b.WriteString("URL: " + redact(u) + "\n")
	if title != "" {
		b.WriteString("Title: " + title + "\n")
	}
	b.WriteString("\n")
	capped := newCappedBuffer(f.cfg.MaxTextBytes)
	_, _ = capped.Write([]byte(strings.ToValidUTF8(text, "\uFFFD")))
	b.WriteString(capped.String())
	switch {
	case capped.Truncated():
		fmt.Fprintf(&b, "\n[text truncated: showing the first %d of %d bytes]", capped.Len(), capped.Total())
	case bodyCut:
		fmt.Fprintf(&b, "\n[page truncated: only the first %d bytes were read]", f.cfg.MaxBodyBytes)
	}
	return b.String()
}

// statusError reports a non-2xx response with the start of its body.
func statusError(source string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, statusSnippetMaxBody))
	snippet := ""
	mediaType, contentType := mediaTypeOf(resp.Header.Get("Content-Type"), body)
	switch {
	case isHTML(mediaType):
		_, snippet, _ = htmlToText(decodeCharset(body, contentType), resp.Request.URL)
	case isText(mediaType):
		snippet = string(body)
	}
	return &HTTPStatusError{
		Source:     source,
		Method:     resp.Request.Method,
		URL:        redact(resp.Request.URL),
		StatusCode: resp.StatusCode,
		Status:     statusText(resp),
		Body:       shorten(snippet, statusSnippetRunes),
	}
}

// statusText is "404 Not Found" even when the server sent no reason phrase.
func statusText(resp *http.Response) string {
	if resp.Status != "" && resp.Status != fmt.Sprint(resp.StatusCode) {
		return resp.Status
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}

// mediaTypeOf returns the media type and full content type of a body,
// sniffing when the server did not say.
func mediaTypeOf(header string, body []byte) (mediaType, contentType string) {
	contentType = header
	if contentType == "" {
		contentType = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0])), contentType
	}
	return mt, contentType
}

func isHTML(mt string) bool {
	return mt == "text/html" || mt == "application/xhtml+xml"
}

func isText(mt string) bool {
	return strings.HasPrefix(mt, "text/") ||
		mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || strings.HasSuffix(mt, "+xml") ||
		mt == "application/javascript" || mt == "application/x-ndjson"
}

// decodeCharset returns a reader of body as UTF-8, using the charset named
// in the content type or, for HTML, in the document.
func decodeCharset(body []byte, contentType string) io.Reader {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return bytes.NewReader(body)
	}
	return r
}

func readAllString(r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	return string(b), err
}

// shorten collapses whitespace and cuts s to at most n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// redact drops credentials from a URL before it is shown.
func redact(u *url.URL) string {
	return u.Redacted()
}
