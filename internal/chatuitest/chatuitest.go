// Package chatuitest finds the production build of a chat UI that the
// LangGraph ecosystem uses with LangGraph servers: assistant-ui's
// LangGraph runtime (@assistant-ui/react-langgraph on
// @langchain/langgraph-sdk), in the small React app of ui/ (packages
// pinned by ui/package-lock.json, built with vite). The browser tests of
// package server serve the build and drive it in headless Chromium
// against coorflow's Platform API.
//
// .ci/run installs the packages with `npm ci` and builds the app once
// per hash of the lockfile and the app's sources, under
// ~/.cache/coorflow/chatui-build/<hash>/dist, and names that folder in
// COORFLOW_CHATUI_DIST. By hand: `npm ci && npm run build` in ui/ (the
// build goes to ui/dist, which is used when the variable is unset).
//
// A test that needs the build skips, saying why, only when it is absent;
// under CI=true that is a failure.
package chatuitest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// DistEnv names the folder of the built UI (its index.html and assets/).
const DistEnv = "COORFLOW_CHATUI_DIST"

// Dir returns the directory of the UI's npm project (ui/).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "ui")
}

// Dist returns the folder of the UI's production build: $COORFLOW_CHATUI_DIST,
// or ui/dist. It skips t when the build is absent, or fails it when
// CI=true.
func Dist(t testing.TB) string {
	t.Helper()
	dist := os.Getenv(DistEnv)
	if dist == "" {
		dist = filepath.Join(Dir(), "dist")
	}
	if _, err := os.Stat(filepath.Join(dist, "index.html")); err != nil {
		msg := fmt.Sprintf("the chat UI is not built in %s: run `npm ci --ignore-scripts && npm run build` in %s, or set %s", dist, Dir(), DistEnv)
		if os.Getenv("CI") == "true" {
			t.Fatalf("chatuitest: %s (CI=true: .ci/run builds it)", msg)
		}
		t.Skipf("chatuitest: %s", msg)
	}
	return dist
}
