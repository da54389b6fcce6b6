package ollamatest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
)

// Both serves Ollama's two APIs on one address, as Ollama does: requests
// under /v1/ (the OpenAI-compatible API, which takes tools) go to
// compatURL, the root of an OpenAI-compatible test server such as
// openaitest's; every other request goes to native. Close it when done.
func Both(native *Server, compatURL string) (*httptest.Server, error) {
	nat, err := url.Parse(native.URL())
	if err != nil {
		return nil, err
	}
	compat, err := url.Parse(compatURL)
	if err != nil {
		return nil, err
	}
	toNative, toCompat := httputil.NewSingleHostReverseProxy(nat), httputil.NewSingleHostReverseProxy(compat)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			toCompat.ServeHTTP(w, r)
			return
		}
		toNative.ServeHTTP(w, r)
	})), nil
}
