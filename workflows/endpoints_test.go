package workflows_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/workflows"
)

// keyCatcher is a loopback listener that records every request it
// receives, URL, headers and body, to find a key in.
type keyCatcher struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newKeyCatcher(t *testing.T) *keyCatcher {
	k := &keyCatcher{}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k.mu.Lock()
		k.seen = append(k.seen, fmt.Sprintf("%s %s %v %s", r.Method, r.URL, r.Header, body))
		k.mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *keyCatcher) received() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Join(k.seen, "\n")
}

// modelFile is a workflow whose basic tier is tier (a flow mapping).
func modelFile(tier string) []byte {
	return []byte(`apiVersion: coorflow/v1
name: wf
state: {answer: {type: string}}
models:
  basic: ` + tier + `
nodes:
  a: {type: llm, prompt: "hi", output: answer}
edges:
  - {from: start, to: a}
  - {from: a, to: end}
`)
}

// keys is an environment with every provider's key set.
func keys(extra ...string) func(string) string {
	env := map[string]string{
		"OPENAI_API_KEY":    "sk-openai-secret",
		"ANTHROPIC_API_KEY": "sk-ant-secret",
		"GOOGLE_API_KEY":    "google-secret",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return func(name string) string { return env[name] }
}

// TestAFileSendsKeysOnlyToItsProvidersEndpoints holds finding 6 of issue
// 26: a file chose base_url and so where the operator's keys went (a
// loopback listener received the Anthropic key and the Google key). A
// key now goes to a base URL the file chose only when it is the
// provider's endpoint or the operator allowed it
// (COORFLOW_ALLOW_ENDPOINTS); an OpenAI tier without api_key_env runs
// keyless there, as for a local server, and the others are an error.
func TestAFileSendsKeysOnlyToItsProvidersEndpoints(t *testing.T) {
	catcher := newKeyCatcher(t)
	origin := catcher.URL // http://127.0.0.1:PORT, an origin already
	for _, c := range []struct{ tier, want string }{
		{`{provider: anthropic, model: claude-sonnet-4-5, base_url: "` + catcher.URL + `"}`,
			"llm: models.basic.base_url: " + origin + " is not an endpoint of anthropic, so ANTHROPIC_API_KEY is not sent to it: " +
				"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: COORFLOW_ALLOW_ENDPOINTS=" + origin},
		{`{provider: googleai, model: gemini-2.5-flash, base_url: "` + catcher.URL + `/v1beta/openai"}`,
			"llm: models.basic.base_url: " + origin + " is not an endpoint of googleai, so GOOGLE_API_KEY is not sent to it: " +
				"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: COORFLOW_ALLOW_ENDPOINTS=" + origin},
		{`{provider: openai, model: gpt-4o, base_url: "` + catcher.URL + `/v1", api_key_env: ANTHROPIC_API_KEY}`,
			"llm: models.basic.base_url: " + origin + " is not an endpoint of openai, so ANTHROPIC_API_KEY is not sent to it: " +
				"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: COORFLOW_ALLOW_ENDPOINTS=" + origin},
	} {
		f, err := workflows.Parse("wf.yaml", modelFile(c.tier))
		require.NoError(t, err)
		_, err = f.Resolve(t.Context(), workflows.ModelOptions{Getenv: keys()})
		require.ErrorIs(t, err, llm.ErrEndpointNotAllowed)
		assert.EqualError(t, err, "workflows: wf.yaml: "+c.want)
	}
	assert.Empty(t, catcher.received(), "the listener received nothing")
}

// TestAnOpenAITierAtAFilesEndpointRunsKeyless: the OpenAI key stays home
// when a file points an OpenAI tier at its own server, and goes there
// once the operator allows the endpoint.
func TestAnOpenAITierAtAFilesEndpointRunsKeyless(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Text("hello"), openaitest.Text("hello again"))
	t.Cleanup(srv.Close)
	tier := `{provider: openai, model: gpt-4o, base_url: "` + srv.BaseURL() + `"}`
	f, err := workflows.Parse("wf.yaml", modelFile(tier))
	require.NoError(t, err)

	call := func(getenv func(string) string) http.Header {
		ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: getenv})
		require.NoError(t, err)
		require.False(t, ms.Demo)
		m, err := ms.Model(llm.TierBasic)
		require.NoError(t, err)
		_, err = llms.GenerateFromSinglePrompt(t.Context(), m, "hi")
		require.NoError(t, err)
		reqs := srv.Requests()
		return reqs[len(reqs)-1].Header
	}
	h := call(keys())
	assert.NotContains(t, fmt.Sprint(h), "sk-openai-secret", "no key for the file's endpoint")

	h = call(keys(llm.EnvAllowEndpoints, srv.URL()))
	assert.Equal(t, "Bearer sk-openai-secret", h.Get("Authorization"), "the operator allowed it")
}

// TestAFileSendsItsSearchKeyOnlyToTavily: web_search's api_key is a key
// the file names, and its base_url an endpoint it chooses; the key goes
// only to Tavily unless the operator allows the endpoint.
func TestAFileSendsItsSearchKeyOnlyToTavily(t *testing.T) {
	catcher := newKeyCatcher(t)
	src := `apiVersion: coorflow/v1
name: wf
state: {answer: {type: string}}
tools:
  web_search: {provider: tavily, api_key: "${ANTHROPIC_API_KEY}", base_url: "` + catcher.URL + `"}
nodes:
  s: {type: tool, tool: web_search, args: {query: '"x"'}, output: answer}
edges:
  - {from: start, to: s}
  - {from: s, to: end}
`
	f, err := workflows.Parse("wf.yaml", []byte(src))
	require.NoError(t, err)
	_, err = f.Compile(t.Context(), workflows.Env{Getenv: keys()})
	assert.EqualError(t, err, "workflows: wf.yaml: tools.web_search.base_url: "+catcher.URL+" is not Tavily's endpoint, so its api_key is not sent to it: "+
		"a workflow file may send a key only to its provider; if you trust the endpoint, allow it: COORFLOW_ALLOW_ENDPOINTS="+catcher.URL)
	assert.Empty(t, catcher.received())

	_, err = f.Compile(t.Context(), workflows.Env{Getenv: keys(llm.EnvAllowEndpoints, catcher.URL)})
	require.NoError(t, err, "the operator allowed it")
}
