package window

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
)

// The summarizer prompts. Each names its parameter as {{.MaxWords}} or
// {{.MaxChars}}, filled in by replacement rather than by text/template:
// a template evaluates fields and methods by name, which makes the linker
// keep every exported method of every type in the binary (#14).
//
//go:embed prompts/*.tmpl
var promptFS embed.FS

// summaryKind says what is summarized, and picks the prompt.
type summaryKind string

const (
	summaryHistory summaryKind = "history"
	summaryOutput  summaryKind = "output"
)

// summaryLimits bound a summary: MaxTokens for history, MaxBytes for
// outputs (0: no bound of that kind).
type summaryLimits struct {
	MaxTokens int
	MaxBytes  int
}

// summarizerPrompt renders the system prompt of a summarizer call.
func summarizerPrompt(kind summaryKind, lim summaryLimits) (string, error) {
	text, err := promptFS.ReadFile("prompts/summarize_" + string(kind) + ".tmpl")
	if err != nil {
		return "", fmt.Errorf("window: render %s summary prompt: %w", kind, err)
	}
	params := strings.NewReplacer(
		"{{.MaxWords}}", strconv.Itoa(lim.MaxTokens*3/4), // for history: three quarters of the token bound
		"{{.MaxChars}}", strconv.Itoa(lim.MaxBytes), // for outputs: the byte bound
	)
	return params.Replace(string(text)), nil
}

// summarizerInput is the user message of a summarizer call.
func summarizerInput(kind summaryKind, label, text string) string {
	tag := "transcript"
	if kind == summaryOutput {
		tag = "output"
	}
	head := "Summarize the " + tag
	if label != "" {
		head += " of " + label
	}
	return head + ".\n\n<" + tag + ">\n" + strings.TrimRight(text, "\n") + "\n</" + tag + ">"
}

// maxCached bounds the summaries a Builder remembers.
const maxCached = 256

// summarize returns a summary of text within lim, and a note on how it was
// made when that was not by the summarizer within its bound. The
// summarizer's call is journaled (graph.Do) under a name that holds the
// text's hash, so a node that runs again gets the same summary without a
// call. Without a summarizer, or when it fails, the summary is an extract;
// only a cancelled context is an error.
func (b *Builder) summarize(ctx context.Context, kind summaryKind, label, text string, lim summaryLimits) (string, string, error) {
	key := fmt.Sprintf("%s.%s.%d.%d", kind, hash(text), lim.MaxTokens, lim.MaxBytes)
	if s, ok := b.cached(key); ok {
		return s, "", nil
	}
	if b.cfg.Summarizer == nil {
		return extract(text, lim), "no summarizer configured: extract of the first lines", nil
	}
	summary, err := graph.Do(ctx, "window.summarize."+key, func(ctx context.Context) (string, error) {
		return b.callSummarizer(ctx, kind, label, text, lim)
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", "", fmt.Errorf("window: summarize %s: %w", kind, err)
		}
		return extract(text, lim), fmt.Sprintf("summarizer failed (%v): extract of the first lines", err), nil
	}
	note := ""
	if fitted, cut := fit(summary, lim); cut {
		summary, note = fitted, "summary cut to its bound"
	}
	b.remember(key, summary)
	return summary, note, nil
}

// callSummarizer makes the summarizer's model call.
func (b *Builder) callSummarizer(ctx context.Context, kind summaryKind, label, text string, lim summaryLimits) (string, error) {
	system, err := summarizerPrompt(kind, lim)
	if err != nil {
		return "", err
	}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, system),
		llms.TextParts(llms.ChatMessageTypeHuman, summarizerInput(kind, label, text)),
	}
	resp, err := b.cfg.Summarizer.GenerateContent(llm.WithAgent(ctx, b.cfg.SummarizerAgent), msgs)
	if err != nil {
		return "", llm.Classify(err)
	}
	if resp == nil || len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Content) == "" {
		return "", errors.New("window: summarizer returned no text")
	}
	return strings.TrimSpace(resp.Choices[0].Content), nil
}

// ellipsis ends a cut summary.
const ellipsis = " …"

// fit cuts s to lim.
func fit(s string, lim summaryLimits) (string, bool) {
	cut := false
	if lim.MaxBytes > 0 {
		var c bool
		if s, c = headBytes(s, lim.MaxBytes-len(ellipsis)); c {
			s, cut = strings.TrimRight(s, " \n")+ellipsis, true
		}
	}
	if lim.MaxTokens > 0 {
		var c bool
		if s, c = headTokens(s, lim.MaxTokens-1); c {
			s, cut = strings.TrimRight(s, " \n")+ellipsis, true
		}
	}
	return s, cut
}

// extract is the summary of last resort: the first lines of text within
// lim.
func extract(text string, lim summaryLimits) string {
	s, _ := fit(strings.TrimSpace(text), lim)
	return s
}

func (b *Builder) cached(key string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.summaries[key]
	return s, ok
}

func (b *Builder) remember(key, summary string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.summaries) >= maxCached {
		clear(b.summaries)
	}
	b.summaries[key] = summary
}
