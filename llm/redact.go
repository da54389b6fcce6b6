package llm

import (
	"errors"
	"regexp"
	"strings"
)

// Redacted stands for a secret taken out of a text.
const Redacted = "[redacted]"

// secretShapes are credentials a provider may echo in an error message,
// whoever's they are: a bearer token, an OpenAI or Anthropic key (sk-...),
// a Google API key (AIza...), a key or token in a URL's query.
var secretShapes = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?i)\bbearer\s+[^\s"',;)\]}]+`), "Bearer " + Redacted},
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{6,}`), Redacted},
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{20,}`), Redacted},
	{regexp.MustCompile(`(?i)([?&](?:key|api_key|apikey|access_token|token)=)[^\s&"'#]+`), "${1}" + Redacted},
}

// minKeyLen is the length under which a configured key is not looked for:
// taking every "abc" out of a message hides nothing and garbles it.
const minKeyLen = 4

// Redact returns s with each of keys, and every text shaped like a
// credential (Bearer tokens, sk-... and AIza... keys, key= and token= in
// URLs), replaced by Redacted.
func Redact(s string, keys ...string) string {
	for _, k := range keys {
		if len(k) >= minKeyLen {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	for _, sh := range secretShapes {
		s = sh.re.ReplaceAllString(s, sh.with)
	}
	return s
}

// RedactError returns err with its text redacted (see Redact), or err
// itself when there is nothing to take out. The result wraps err, so
// errors.Is and errors.As see the same chain; an *APIError in the chain is
// replaced by a copy whose Message is redacted too. Only errors reached by
// unwrapping past those two may still hold the provider's words.
func RedactError(err error, keys ...string) error {
	if err == nil {
		return nil
	}
	if apiErr, ok := err.(*APIError); ok {
		c := *apiErr
		c.Message = Redact(c.Message, keys...)
		c.Err = RedactError(c.Err, keys...)
		return &c
	}
	text := err.Error()
	clean := Redact(text, keys...)
	if clean == text {
		return err
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return &redactedError{text: clean, err: err, api: RedactError(apiErr, keys...).(*APIError)}
	}
	return &redactedError{text: clean, err: err}
}

// redactedError is an error whose text has its secrets taken out.
type redactedError struct {
	text string
	err  error
	// api is the redacted copy of the *APIError in err's chain, if any,
	// which errors.As finds first.
	api *APIError
}

func (e *redactedError) Error() string { return e.text }

// Unwrap returns the error whose text was redacted.
func (e *redactedError) Unwrap() error { return e.err }

// As gives the redacted copy of the chain's *APIError.
func (e *redactedError) As(target any) bool {
	if t, ok := target.(**APIError); ok && e.api != nil {
		*t = e.api
		return true
	}
	return false
}
