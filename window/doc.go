// Package window decides what one model call sees. An agent gives it the
// parts of its context — system prompt, memory, task, handoffs, completed
// steps, its own history, tool results — and a token budget; Assemble
// returns the messages to send and a Snapshot of exactly what went in:
// each part's tokens, what was cut or left out and why, and which
// policies were applied.
//
// The policies, each set in Config (defaults chosen with bench/longrun):
//
//   - Priorities: parts are laid out in the order given, but when the
//     window exceeds the budget they are left out lowest priority first;
//     required parts are cut, never dropped.
//   - Tiered compression of completed steps, once the window reaches 30%
//     of the limit (with clearing, so both break the prompt cache on the
//     same call): the last 3 in full, the 7 before as summaries with
//     their confidence, older ones as one line of metadata with a
//     reference. Once an agent's steps are tiered they stay tiered, so
//     the prompt's beginning does not change when the window shrinks.
//   - Offload: a tool result above 8,000 tokens (about 32 KB) goes to the
//     Offloader and is replaced by its reference and a preview of its
//     first and last 5 lines, with the Markdown headings of the lines
//     between and the offsets read_context reads them from; a page read back with read_context is never
//     offloaded again (it is stored already, and the agent asked for it);
//     an agent output above 32 KiB becomes a summary of at most
//     4 KiB and a reference. The read_context tool (ReadContextTool) reads
//     the full text back page by page.
//   - Clearing of old tool results (Config.Clear, on by default): at
//     30% of the limit every tool result older than the latest
//     tool-calling turn is offloaded and replaced by a one-line stub
//     with its reference, all at once, so the window drops to its floor
//     (fixed parts, stubs, the latest results) and the prompt prefix stays
//     stable until the next clearing.
//   - Summarization of the history at 85% of the limit: older messages are
//     archived and replaced by a summary, the newest 10% (by tokens) kept
//     verbatim; with no known limit, at 170,000 tokens, keeping the last 6
//     messages. A tool call and its results are never separated.
//     CallWithOverflowRetry summarizes and retries once when a provider
//     still reports a context overflow.
//   - A stable prefix for prompt caches: the parts come first in the
//     order given (system, tools, pinned parts), the history after them
//     only grows between compactions, and nothing in a prompt changes
//     from call to call (no clock, no budget figures); PrefixReuse and
//     PrefixMeter measure how much of each prompt repeats the previous
//     one.
//   - Results, not process: RenderResults renders the planner's view of
//     the steps, one line each.
//
// What each policy costs and saves (figures from bench/longrun: one agent,
// 100 tool turns of 2,000 to 60,000 tokens each, on a 128k window; with
// the defaults it sends 73% fewer prompt tokens than an agent that
// truncates its history to the window, 81% fewer weighted by cached
// price, reuses 85% of each prompt and finds 7 of 7 answers, where the
// truncating agent finds none):
//
//   - Offload saves the tokens of every large result on every later call
//     and costs nothing until the agent needs more than the preview: then
//     one read_context call per page (16 KiB by default). Every token of
//     a new result is new to the provider's cache, so the preview in its
//     place also keeps the share of each prompt the cache serves high
//     (85% in the bench; 76% with results up to 20,000 tokens kept).
//     Lossless; an agent that reads most of its big results whole does
//     better with a higher Offload.Tokens.
//   - Clearing does most of the work in a long tool-using run (most of a
//     run's prompt tokens are old tool results); it costs a read_context
//     call when a cleared result is needed again, and one break of the
//     prompt cache per clearing, which is why it clears everything old
//     at once. Lossless. Clear.Threshold lower clears sooner and more
//     often (fewer tokens, more cache breaks: at 25% the bench sends 76%
//     fewer tokens and reuses 83%; at 50%, 63% fewer and 88%); KeepTurns
//     higher keeps more recent results in view, but each kept result
//     moves behind the new stubs and is sent uncached after every
//     clearing (KeepTurns 2: 71% fewer tokens, 82% reuse).
//   - Step compression saves the older steps' results in a plan of many
//     steps; the full results stay readable by reference. Lossless.
//   - Summarization is the last resort: it costs a summarizer call (the
//     basic tier, up to SummaryTokens of output) and loses detail the
//     summary leaves out (the archived transcript stays readable), so it
//     starts late (85% of the limit), after clearing had its chance.
//
// All four are on by default; without an Offloader, offload and clearing
// are skipped (there is nowhere to read the text back from). The
// factory's agents and a workflow file's react nodes get an Offloader on
// the run's mission board; a file turns policies off or tunes them in
// settings.context or a node's context section.
//
// Token counts are llm.EstimateMessages estimates; the limit is the
// budget's MaxInputTokens (llm.Profile) less its output reserve. Summaries
// come from Config.Summarizer with the prompts in prompts/, and are
// journaled with graph.Do, so a node that runs again after an interrupt
// gets the same summary without a model call. Offloaded text lives where
// the Offloader puts it: NewBoardStore keeps it on the run's mission
// board.
//
// Agents that send their messages as they are (a coordinator, a planner,
// a reporter, a ReAct agent without a Builder) wrap their model with
// Observe, outside llm.Observe: each call publishes the snapshot Describe
// gives of the messages sent, so that every model call of a run has one;
// a call a Builder assembled keeps the Builder's.
//
// A typical agent turn:
//
//	w := window.New(window.Config{Offloader: window.NewBoardStore(b, who), Summarizer: basic})
//	resp, res, err := w.Generate(ctx, model, window.Request{
//		Agent:  "researcher-1",
//		Budget: window.Budget{MaxInputTokens: profile.MaxInputTokens, ReserveForOutput: 4096},
//		Parts: []window.Part{
//			{Name: "system", Kind: window.KindSystem, Text: prompt, Required: true},
//			{Name: "task", Kind: window.KindTask, Text: task, Required: true},
//			{Name: "steps", Kind: window.KindSteps, Steps: done},
//			{Name: "history", Kind: window.KindHistory, Messages: history, Required: true},
//		},
//	}, llms.WithTools(reg.LLMTools()))
//	if m, ok := res.Compacted["history"]; ok {
//		history = m // summarized and archived for good
//	}
package window
