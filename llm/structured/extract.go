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
// When nothing parses, the error is the JSON syntax error at the first
// candidate, which is what a model needs to fix its reply.
func ExtractJSON(reply string) (json.RawMessage, error) {
	text := llm.StripThink(reply)
	var firstErr error
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		raw, err := firstValue(m[1])
		if err == nil {
			return raw, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	raw, err := firstValue(text)
	if err == nil {
		return raw, nil
	}
	if firstErr == nil {
		firstErr = err
	}
	return nil, firstErr
}

// errNoJSON is the error for a reply without any '{' or '['.
var errNoJSON = errors.New("no JSON object or array found in the reply")

// maxCandidates bounds how many starting brackets firstValue tries.
const maxCandidates = 32

// firstValue returns the first JSON object or array in s that parses.
func firstValue(s string) (json.RawMessage, error) {
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
		return bytes.TrimSpace(raw), nil
	}
	if firstErr == nil {
		return nil, errNoJSON
	}
	return nil, firstErr
}
