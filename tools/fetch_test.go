package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

const page = `<!doctype html>
<html><head><title>Go  Tools</title><style>body{margin:0}</style>
<script>window.tracking = true;</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Writing tools</h1>
<p>A tool has a <b>name</b>,
   a description and a <a href="/schema">schema</a>.</p>
<ul><li>python</li><li>http_fetch</li></ul>
<script>console.log("dropped")</script>
</body></html>`

// fetch calls the http_fetch tool directly and returns its text or error.
func fetch(t *testing.T, cfg tools.HTTPFetchConfig, url string) (string, error) {
	t.Helper()
	args, err := json.Marshal(map[string]string{"url": url})
	require.NoError(t, err)
	return tools.HTTPFetch(cfg).Call(t.Context(), args)
}

// serve starts a test server that answers every request with h.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// local allows the loopback test servers.
var local = tools.HTTPFetchConfig{AllowPrivate: true}

func TestHTTPFetchReturnsReadableText(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		want        string
	}{
		{
			name:        "html",
			contentType: "text/html; charset=utf-8",
			body:        page,
			want:        "Title: Go Tools\n\n# Writing tools\n\nA tool has a name, a description and a schema (SRV/schema).\n\n- python\n- http_fetch",
		},
		{
			name:        "plain text passes through",
			contentType: "text/plain",
			body:        "line one\n\n   line two\n",
			want:        "\nline one\n\n   line two\n",
		},
		{
			name:        "json passes through",
			contentType: "application/json",
			body:        `{"answer": 42}`,
			want:        "\n{\"answer\": 42}",
		},
		{
			name:        "charset is decoded",
			contentType: "text/plain; charset=iso-8859-1",
			body:        "caf\xe9",
			want:        "\ncafé",
		},
		{
			name: "missing content type is sniffed",
			body: "<html><body><p>sniffed   html</p></body></html>",
			want: "\nsniffed html",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType == "" {
					w.Header()["Content-Type"] = nil
				} else {
					w.Header().Set("Content-Type", tt.contentType)
				}
				_, _ = w.Write([]byte(tt.body))
			})
			got, err := fetch(t, local, srv.URL+"/page")
			require.NoError(t, err)
			want := "URL: " + srv.URL + "/page\n" + strings.ReplaceAll(tt.want, "SRV", srv.URL)
			assert.Equal(t, want, got)
		})
	}
}

func TestHTTPFetchRefusesContentThatIsNotText(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG"))
	})
	_, err := fetch(t, local, srv.URL+"/logo.png")
	assert.EqualError(t, err, "tools: http_fetch: GET "+srv.URL+"/logo.png returned image/png content, which cannot be read as text")
}

func TestHTTPFetchReportsStatusErrors(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantStatus  string
		wantBody    string
	}{
		{name: "404 with html", status: 404, contentType: "text/html", body: "<html><body><h1>Not here</h1><p>Try the <a href='/'>home page</a>.</p></body></html>",
			wantStatus: "404 Not Found", wantBody: "# Not here Try the home page (SRV/)."},
		{name: "503 with text", status: 503, contentType: "text/plain", body: "overloaded\n", wantStatus: "503 Service Unavailable", wantBody: "overloaded"},
		{name: "500 with a binary body", status: 500, contentType: "application/octet-stream", body: "\x00\x01", wantStatus: "500 Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			_, err := fetch(t, local, srv.URL+"/missing")
			var se *tools.HTTPStatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.status, se.StatusCode)
			want := "tools: http_fetch: GET " + srv.URL + "/missing returned " + tt.wantStatus
			if tt.wantBody != "" {
				want += ": " + strings.ReplaceAll(tt.wantBody, "SRV", srv.URL)
			}
			assert.EqualError(t, err, want)
		})
	}
}

func TestHTTPFetchStatusErrorAsTheModelSeesIt(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	res := tools.Run(t.Context(), tools.HTTPFetch(local), json.RawMessage(`{"url":"`+srv.URL+`/x"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	assert.Equal(t, `Error: tool "http_fetch" failed: http_fetch: GET `+srv.URL+`/x returned 404 Not Found: no such page`, res.Text())
}

func TestHTTPFetchCapsTheBodyAndTheText(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Repeat("a", 1000)))
	})
	got, err := fetch(t, tools.HTTPFetchConfig{AllowPrivate: true, MaxBodyBytes: 100}, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "URL: "+srv.URL+"\n\n"+strings.Repeat("a", 100)+"\n[page truncated: only the first 100 bytes were read]", got)

	got, err = fetch(t, tools.HTTPFetchConfig{AllowPrivate: true, MaxTextBytes: 10}, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "URL: "+srv.URL+"\n\naaaaaaaaaa\n[text truncated: showing the first 10 of 1000 bytes]", got)
}

func TestHTTPFetchHostRules(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("reached"))
	})
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	tests := []struct {
		name    string
		cfg     tools.HTTPFetchConfig
		url     string
		wantErr string
	}{
		{name: "loopback refused by default", url: srv.URL,
			wantErr: "tools: host 127.0.0.1 denied: it is a private or loopback address"},
		{name: "IPv6 loopback refused by default", url: "http://[::1]" + port,
			wantErr: "tools: host ::1 denied: it is a private or loopback address"},
		{name: "cloud metadata refused by default", url: "http://169.254.169.254/latest/meta-data/",
			wantErr: "tools: host 169.254.169.254 denied: it is a private or loopback address"},
		{name: "private network refused by default", url: "http://10.1.2.3/",
			wantErr: "tools: host 10.1.2.3 denied: it is a private or loopback address"},
		{name: "loopback allowed when private addresses are", cfg: tools.HTTPFetchConfig{AllowPrivate: true}, url: srv.URL},
		{name: "deny list covers subdomains", cfg: tools.HTTPFetchConfig{DenyHosts: []string{"example.com"}}, url: "https://docs.example.com/a",
			wantErr: "tools: host docs.example.com denied: it is on the deny list"},
		{name: "host not on the allow list", cfg: tools.HTTPFetchConfig{AllowHosts: []string{"example.org"}}, url: "https://example.com/",
			wantErr: "tools: host example.com denied: it is not on the allow list"},
		{name: "deny wins over allow", cfg: tools.HTTPFetchConfig{AllowPrivate: true, AllowHosts: []string{"127.0.0.1"}, DenyHosts: []string{"127.0.0.1"}}, url: srv.URL,
			wantErr: "tools: host 127.0.0.1 denied: it is on the deny list"},
		{name: "allow list admits its host", cfg: tools.HTTPFetchConfig{AllowPrivate: true, AllowHosts: []string{"127.0.0.1"}}, url: srv.URL},
		{name: "other schemes refused", url: "file:///etc/passwd",
			wantErr: `tools: http_fetch: invalid URL "file:///etc/passwd": only http and https URLs can be fetched`},
		{name: "not a URL", url: "the home page",
			wantErr: `tools: http_fetch: invalid URL "the home page": only http and https URLs can be fetched`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fetch(t, tt.cfg, tt.url)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, "URL: "+tt.url+"\n\nreached", got)
				return
			}
			assert.EqualError(t, err, tt.wantErr)
			if strings.Contains(tt.wantErr, "denied") {
				assert.ErrorIs(t, err, tools.ErrDeniedHost)
			}
		})
	}
}

func TestHTTPFetchRefusesANameThatResolvesToAPrivateAddress(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("reached"))
	})
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	_, err := fetch(t, tools.HTTPFetchConfig{}, "http://localhost"+port+"/")
	require.ErrorIs(t, err, tools.ErrDeniedHost)
	var denied *tools.HostDeniedError
	require.ErrorAs(t, err, &denied)
	assert.Equal(t, "localhost", denied.Host)
	assert.Contains(t, []string{
		"tools: host localhost denied: it resolves to 127.0.0.1, a private or loopback address",
		"tools: host localhost denied: it resolves to ::1, a private or loopback address",
	}, err.Error())
}

func TestHTTPFetchFollowsRedirectsUnderTheSameRules(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, "http://blocked.example/secret", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("new place"))
		}
	})
	cfg := tools.HTTPFetchConfig{AllowPrivate: true, DenyHosts: []string{"blocked.example"}}

	got, err := fetch(t, cfg, srv.URL+"/old")
	require.NoError(t, err)
	assert.Equal(t, "URL: "+srv.URL+"/new\n\nnew place", got, "the final URL is shown")

	_, err = fetch(t, cfg, srv.URL+"/away")
	assert.EqualError(t, err, "tools: host blocked.example denied: it is on the deny list")

	_, err = fetch(t, cfg, srv.URL+"/loop")
	assert.EqualError(t, err, "tools: http_fetch: GET "+srv.URL+"/loop: stopped after 5 redirects")
}

func TestHTTPFetchTimeout(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; ends when the client gives up
	})
	cfg := tools.HTTPFetchConfig{AllowPrivate: true, Timeout: 50 * time.Millisecond}

	_, err := fetch(t, cfg, srv.URL+"/slow")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualError(t, err, "tools: http_fetch: GET "+srv.URL+"/slow: no answer within 50ms: context deadline exceeded")

	res := tools.Run(t.Context(), tools.HTTPFetch(cfg), json.RawMessage(`{"url":"`+srv.URL+`/slow"}`), tools.RunOptions{})
	assert.Equal(t, tools.StatusDegraded, res.Status)
	assert.Equal(t, `tool "http_fetch" did not answer within 50ms; continue with what you have.`, res.Output)
}

func TestHTTPFetchConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := fetch(t, local, url)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "tools: http_fetch: GET "+url+": dial tcp "), err.Error())
	assert.False(t, errors.Is(err, tools.ErrDeniedHost))
}
