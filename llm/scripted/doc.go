// Package scripted provides an llms.Model that answers from a script, for
// tests and the offline demo: no network, no API key, the same replies on
// every run.
//
// A Script gives each agent its replies turn by turn (the agent is the
// label set with llm.WithAgent), rules that answer any call whose prompt
// matches, and an optional default. Replies carry text, reasoning, tool
// calls (with stable ids, several per reply), errors of any llm class,
// latency, and a Wait hook such as a Barrier for concurrency tests. The
// Model behaves like a langchaingo client: it streams text through
// llms.WithStreamingFunc, fills GenerationInfo with estimated token usage
// under the OpenAI client's keys, and refuses tool calls to tools the call
// did not offer. It records every call for assertions and fails loudly —
// naming the agent and turn — when an agent's script runs out.
//
// Scripts are written in Go or loaded from YAML with Load or LoadFile.
package scripted
