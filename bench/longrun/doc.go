// Package longrun measures context engineering where it is hardest: one
// ReAct agent (gpt-4o, a 128k window) working for 100 turns with big tool
// results (search and fetch results of 2,000 to 10,000 tokens, every 15th
// an archive of 40,000 to 60,000), over the OpenAI wire protocol
// (llm/openaitest, with a scripted model side that decides the tool calls
// and answers only from what it is sent), then asked questions whose
// answers sit in its first tool results. A summarizer model, on a server of
// its own, writes the summaries, and its tokens are counted.
//
// It measures three baselines: unbounded (everything sent, however large:
// what a model with no window limit would see), truncated to the model's
// real window (everything that fits, the oldest history cut: what an agent
// without context management can send), and the product's defaults (the
// window factory.GiveWindow gives a team's agent or a react node); then
// each window mechanism — offload, step compression, clearing of old tool
// results, summarization of the history — alone and added up. For each:
// prompt tokens, tokens weighted by their cached price, the summarizer's
// tokens, the answers found (in the prompt or through read_context), and
// prefix reuse, the share of each prompt identical to the beginning of the
// previous one, which a provider's prompt cache serves at a discount.
//
// TestLongRun asserts issue 30's targets for the product's defaults
// against the truncated baseline: every answer found, at least 80% prefix
// reuse, and at least 70% fewer prompt tokens or 80% fewer price-weighted
// ones (measured: 73.2% and 81.4% fewer, 84.8% reuse, 7 of 7 answers,
// where the truncated baseline finds none). The scripted model never
// needs a research result again until the questions, so a result moved
// out costs it nothing until then; an agent that reads most of its big
// results whole pays one read_context call for each result above the
// offload threshold (8,000 tokens), and does better with a higher one.
//
//	go test -v -run TestLongRun ./bench/longrun
//	go test -run '^$' -bench LongRun -benchtime 1x ./bench/longrun
package longrun
