// Package longrun measures context engineering where it is hardest: one
// ReAct agent working for 100 turns with big tool results (search and
// fetch results of 2,000 to 10,000 tokens, every 15th an archive of
// 40,000 to 60,000), over the OpenAI wire protocol (llm/openaitest, with
// a scripted model side that decides the tool calls and answers only from
// what it is sent), then asked questions whose answers sit in its first
// tool results. It compares the prompt tokens of each window mechanism —
// offload, step compression, clearing of old tool results, summarization
// of the history — alone and added up, against keeping everything; checks
// that every answer is still found, in the prompt or through read_context;
// and measures prefix reuse, the share of each prompt identical to the
// beginning of the previous one, which a provider's prompt cache serves
// at a tenth of the price.
//
//	go test -v -run TestLongRun ./bench/longrun
//	go test -run '^$' -bench LongRun -benchtime 1x ./bench/longrun
package longrun
