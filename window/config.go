package window

import (
	"math"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Budget is the room a model call has.
type Budget struct {
	// MaxInputTokens is the model's input window (llm.Profile's
	// MaxInputTokens); 0 when unknown, in which case nothing is left out
	// for size and the policies use their fallback thresholds.
	MaxInputTokens int `json:"max_input_tokens"`
	// ReserveForOutput is kept free for the reply.
	ReserveForOutput int `json:"reserve_for_output,omitempty"`
}

// Limit returns the tokens the messages may take, MaxInputTokens less
// ReserveForOutput, or 0 when the window is unknown. The policies'
// thresholds are fractions of it.
func (b Budget) Limit() int {
	if b.MaxInputTokens <= 0 {
		return 0
	}
	return b.MaxInputTokens - b.ReserveForOutput
}

// Policy defaults. The thresholds of steps and clearing (30% of the
// limit), the offload size (8,000 tokens) and KeepTurns (1) were chosen
// with bench/longrun, against an agent that truncates its history to the
// model's window: 73% fewer prompt tokens, 7/7 answers, 85% prefix reuse
// (window/doc.go says what each costs). The fallbacks, used when the limit
// is unknown, are the same fractions of a 200,000-token window.
const (
	DefaultStepsThreshold      = 0.30
	DefaultStepsFallbackTokens = 60_000
	DefaultFullSteps           = 3
	DefaultSummarizedSteps     = 7

	DefaultOffloadTokens      = 8_000
	DefaultPreviewLines       = 5
	DefaultOutputBytes        = 32 << 10
	DefaultOutputSummaryBytes = 4 << 10

	DefaultClearThreshold      = 0.30
	DefaultClearFallbackTokens = 60_000
	DefaultClearKeepTurns      = 1
	DefaultClearMinTokens      = 200

	DefaultHistoryThreshold      = 0.85
	DefaultHistoryKeep           = 0.10
	DefaultHistoryFallbackTokens = 170_000
	DefaultHistoryFallbackKeep   = 6
	DefaultHistorySummaryTokens  = 2_000

	// DefaultSummarizerAgent labels the summarizer's model calls
	// (llm.WithAgent).
	DefaultSummarizerAgent = "summarizer"
)

// StepsPolicy configures the tiered compression of completed steps.
type StepsPolicy struct {
	// Disabled shows every step in full.
	Disabled bool
	// Threshold is the fraction of the limit the window must reach for
	// compression to start (default 0.30, with clearing, so that both
	// break the prompt cache on one call); below it every step is shown
	// in full.
	Threshold float64
	// FallbackTokens replaces Threshold when the limit is unknown
	// (default 60,000).
	FallbackTokens int
	// Full is how many of the latest steps are shown in full (default 3).
	Full int
	// Summarized is how many steps before those are shown as their summary
	// and confidence (default 7, so steps 4 to 10 from the end); older
	// steps are one line of metadata with a reference.
	Summarized int
}

// OffloadPolicy configures what moves out of the window to the store.
type OffloadPolicy struct {
	// Disabled keeps large tool results and outputs in the window.
	Disabled bool
	// Tokens is the size above which a tool result is offloaded and
	// replaced by a reference and a preview (default 8,000, about 32 KB:
	// a result that big is new to every cache once, so moving it out
	// saves its tokens on every later call). Pages read back with
	// read_context are never offloaded again.
	Tokens int
	// PreviewLines is how many first and last lines the preview shows
	// (default 5); the Markdown headings between are listed with their
	// offsets.
	PreviewLines int
	// OutputBytes is the size above which an agent's output (a handoff, a
	// step's result) is replaced by a summary and a reference
	// (default 32 KiB).
	OutputBytes int
	// SummaryBytes caps that summary (default 4 KiB).
	SummaryBytes int
}

// ClearPolicy configures the clearing of old tool results (context
// editing): once the window reaches the threshold, every tool result
// older than the last KeepTurns tool-calling turns is moved to the
// Offloader and replaced in the history by a one-line stub with its
// reference, which read_context reads back. It runs before the history
// is summarized, since it loses nothing the agent cannot read again.
type ClearPolicy struct {
	// Disabled keeps every tool result in the history until the history
	// is summarized. Clearing is on by default: it loses nothing the agent
	// cannot read back, and needs an Offloader (without one it is skipped).
	Disabled bool
	// Threshold is the fraction of the limit the window must reach for
	// clearing to run (default 0.30).
	Threshold float64
	// FallbackTokens replaces Threshold when the limit is unknown
	// (default 60,000).
	FallbackTokens int
	// KeepTurns is how many of the latest tool-calling turns keep their
	// results (default 1: the results the agent has not answered yet).
	// A kept result moves up behind the new stubs, so the provider's
	// cache misses it on the next call: each kept turn costs its tokens
	// uncached at every clearing, and the latest turn's results are
	// uncached anyway.
	KeepTurns int
	// MinTokens: smaller results are kept, their stub would save little
	// (default 200).
	MinTokens int
	// Exclude names tools whose results are never cleared.
	Exclude []string
}

// HistoryPolicy configures the summarization of the conversation.
type HistoryPolicy struct {
	// Disabled never summarizes the history; it is then only cut when
	// required and over budget.
	Disabled bool
	// Threshold is the fraction of the limit at which the older history is
	// summarized (default 0.85).
	Threshold float64
	// Keep is the fraction of the history's tokens kept verbatim, newest
	// first (default 0.10); at least the last message group is kept.
	Keep float64
	// FallbackTokens replaces Threshold when the limit is unknown
	// (default 170,000).
	FallbackTokens int
	// FallbackKeep is how many of the latest messages are kept when the
	// limit is unknown (default 6).
	FallbackKeep int
	// SummaryTokens caps the summary (default 2,000, and never more than
	// a tenth of a known limit).
	SummaryTokens int
}

// Config configures a Builder. The zero value applies the mission's
// defaults but cannot offload or archive anything and summarizes by
// extraction: set Offloader and Summarizer.
type Config struct {
	// Offloader receives what leaves the window: large tool results, large
	// outputs, evicted history. Without one those policies are skipped.
	Offloader Offloader
	// Summarizer writes the summaries of outputs and history. Without one,
	// or when it fails, the summary is an extract (the first lines).
	Summarizer llms.Model
	// SummarizerAgent labels the summarizer's calls (default
	// DefaultSummarizerAgent).
	SummarizerAgent string

	Steps   StepsPolicy
	Offload OffloadPolicy
	Clear   ClearPolicy
	History HistoryPolicy

	// Now is the clock of snapshots; nil means time.Now.
	Now func() time.Time
}

// withDefaults returns c with every zero setting at its default.
func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v <= 0 || *v > 1 {
			*v = d
		}
	}
	deff(&c.Steps.Threshold, DefaultStepsThreshold)
	def(&c.Steps.FallbackTokens, DefaultStepsFallbackTokens)
	def(&c.Steps.Full, DefaultFullSteps)
	def(&c.Steps.Summarized, DefaultSummarizedSteps)
	def(&c.Offload.Tokens, DefaultOffloadTokens)
	def(&c.Offload.PreviewLines, DefaultPreviewLines)
	def(&c.Offload.OutputBytes, DefaultOutputBytes)
	def(&c.Offload.SummaryBytes, DefaultOutputSummaryBytes)
	deff(&c.Clear.Threshold, DefaultClearThreshold)
	def(&c.Clear.FallbackTokens, DefaultClearFallbackTokens)
	def(&c.Clear.KeepTurns, DefaultClearKeepTurns)
	def(&c.Clear.MinTokens, DefaultClearMinTokens)
	deff(&c.History.Threshold, DefaultHistoryThreshold)
	deff(&c.History.Keep, DefaultHistoryKeep)
	def(&c.History.FallbackTokens, DefaultHistoryFallbackTokens)
	def(&c.History.FallbackKeep, DefaultHistoryFallbackKeep)
	def(&c.History.SummaryTokens, DefaultHistorySummaryTokens)
	if c.SummarizerAgent == "" {
		c.SummarizerAgent = DefaultSummarizerAgent
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// trigger returns the token count at which a policy with threshold
// fraction starts, for a limit (0: unknown, use fallback).
func trigger(fraction float64, limit, fallback int) int {
	if limit <= 0 {
		return fallback
	}
	return int(math.Ceil(fraction*float64(limit) - 1e-9))
}
