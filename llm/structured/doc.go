// Package structured asks a model for JSON that matches a JSON Schema and
// decodes it into a Go value, repairing invalid replies by asking again.
//
// Generate[T] derives the schema from T (see Schema for the `json` and
// `jsonschema` tags it honours) or takes one WithSchema, adds it to the
// prompt, and reads the JSON values of the reply — dropping <think>
// blocks, code fences and prose around them (see ExtractJSON) — taking the
// first that validates with github.com/santhosh-tekuri/jsonschema/v5, so
// that a citation such as "[1]" before the answer is passed over. When
// none validates it sends the problems back to the model and asks again
// (two repairs by default), and finally fails with an *Error saying what
// was expected (Summarize) and holding the last reply and its problems.
package structured
