package structured

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// fence matches a Markdown code fence with an optional language tag.
var fence = regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```")

// ExtractJSON finds the JSON object or array in a model's reply:
//   - <think>…</think> blocks are removed; a "</think>" without its
//     opening tag drops everything before it (some servers strip the
//     opening tag), and an unclosed "<think>" everything after it;
//   - the contents of Markdown code fences are tried first, in order;
//   - otherwise the first '{' or '[' that starts a valid JSON value is
//     taken, so prose before and after the JSON is ignored.
//
// It takes the first value that parses, whatever its shape: in "See [1].
// {...}" that is [1]. Generate, which knows the schema, takes the first
// that validates instead.
//
// When nothing parses, the error is the JSON syntax error at the first
// candidate, which is what a model needs to fix its reply.
func ExtractJSON(reply string) (json.RawMessage, error) {
	cands, err := candidates(reply)
	if len(cands) == 0 {
		return nil, err
	}
	return cands[0], nil
}

// errNoJSON is the error for a reply without any '{' or '['.
var errNoJSON = errors.New("no JSON object or array found in the reply")

// maxCandidates bounds how many starting brackets are tried in one piece
// of text.
const maxCandidates = 32

// candidates returns the JSON objects and arrays of a reply in the order
// ExtractJSON prefers them: the values in code fences first, then those in
// the text, left to right. A value inside another is not a candidate of
// its own, and a value is listed once. When there is none, the error is
// the syntax error at the first bracket tried, or errNoJSON.
func candidates(reply string) ([]json.RawMessage, error) {
	text := llm.StripThink(reply)
	var out []json.RawMessage
	var firstErr error
	add := func(s string) {
		vals, err := values(s)
		if firstErr == nil {
			firstErr = err
		}
		for _, v := range vals {
			if !containsRaw(out, v) {
				out = append(out, v)
			}
		}
	}
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		add(m[1])
	}
	add(text)
	if len(out) > 0 {
		return out, nil
	}
	if firstErr == nil {
		firstErr = errNoJSON
	}
	return nil, firstErr
}

// values returns the JSON objects and arrays in s that parse, skipping
// over each one found, and the syntax error at the first bracket that
// starts none.
func values(s string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	var firstErr error
	tried := 0
	for i := 0; i < len(s) && tried < maxCandidates; i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		tried++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out = append(out, bytes.TrimSpace(raw))
		i += int(dec.InputOffset()) - 1
	}
	return out, firstErr
}

func containsRaw(list []json.RawMessage, v json.RawMessage) bool {
	for _, w := range list {
		if bytes.Equal(w, v) {
			return true
		}
	}
	return false
}
