package llm

import (
	"testing"
)

// AddOpenAIWireProviderForTest adds provider name, which speaks OpenAI's
// chat-completions protocol, the way a new entry in providerSpecs does —
// key in keyEnv, base URL in baseURLEnv, calls to endpoint by default,
// free or not — until t ends. Tests using it must not run in parallel.
func AddOpenAIWireProviderForTest(t testing.TB, name Provider, keyEnv, baseURLEnv, endpoint string, free bool) {
	t.Helper()
	o, ok := origin(endpoint)
	if !ok {
		t.Fatalf("endpoint %q is not an http(s) URL", endpoint)
	}
	openAI, _ := specOf(ProviderOpenAI)
	saved := providerSpecs
	providerSpecs = append(append([]providerSpec(nil), saved...), providerSpec{name: name, keyEnv: keyEnv, baseURLEnv: baseURLEnv,
		endpoint: endpoint, origins: []string{o}, free: free, build: openAI.build})
	t.Cleanup(func() { providerSpecs = saved })
}
