// Package structured asks a model for JSON that matches a JSON Schema and
// decodes it into a Go value, repairing invalid replies by asking again.
//
// Generate[T] derives the schema from T (see Schema for the `json` and
// `jsonschema` tags it honours) or takes one WithSchema, adds it to the
// prompt, and extracts the JSON from the reply — dropping <think> blocks,
// code fences and prose around it (ExtractJSON). It validates the JSON with
// github.com/santhosh-tekuri/jsonschema/v5; on failure it sends the
// problems back to the model and asks again (two repairs by default), and
// finally fails with an *Error holding the last reply and its problems.
package structured
