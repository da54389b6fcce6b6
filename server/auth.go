package server

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/url"
	"strings"
)

type ownerKey struct{}

// ownerFrom returns the owner the request's token acts for.
func ownerFrom(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

// auth lets a request through when it carries a known bearer token, with
// the token's owner in its context; otherwise it answers 401. The token
// comes in the header Authorization: Bearer <token>, or X-Api-Key, where
// the LangGraph SDKs send their apiKey.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		tok = strings.TrimSpace(tok)
		if r.Header.Get("Authorization") == "" {
			scheme, tok = "Bearer", strings.TrimSpace(r.Header.Get("X-Api-Key"))
		}
		if !strings.EqualFold(scheme, "Bearer") || tok == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="coorflow"`)
			writeError(w, errorf(http.StatusUnauthorized, CodeUnauthorized, "missing bearer token: send the header Authorization: Bearer <token> (or X-Api-Key: <token>)"))
			return
		}
		// Tokens are looked up by their hash, so the lookup's timing tells
		// nothing about how much of a token was right.
		owner, ok := s.tokens[sha256.Sum256([]byte(tok))]
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="coorflow", error="invalid_token"`)
			writeError(w, errorf(http.StatusUnauthorized, CodeUnauthorized, "unknown bearer token"))
			return
		}
		markAuthenticated(r.Context()) // the connection leaves the anonymous share (connguard.go)
		h(w, r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner)))
	}
}

// threadKey is the id under which the Saver stores an owner's thread. It
// is derived from both, so another owner's thread of the same id is a
// different thread, which this owner cannot reach.
func threadKey(owner, thread string) string {
	return url.PathEscape(owner) + "/" + thread
}
