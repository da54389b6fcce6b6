package structured

// Decode finds in reply the JSON value that matches the schema of T (or
// the one given WithSchema) and decodes it, without calling a model: the
// same search as Generate's (see ExtractJSON for where it looks), taking
// the first candidate that validates rather than the first that parses,
// so "I read [1] and [2]. {...}" yields the object. When none validates it
// returns an *Error (Attempts 0) with the problems of the candidate closest
// to the schema. Other options than WithSchema are ignored.
func Decode[T any](reply string, opts ...Option) (T, error) {
	var zero T
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	schema := o.schema
	if schema == nil {
		var err error
		if schema, err = SchemaFor[T](); err != nil {
			return zero, err
		}
	}
	compiled, err := compile(schema)
	if err != nil {
		return zero, err
	}
	v, problems, cause := parse[T](reply, compiled, rootTypes(schema))
	if problems != nil {
		return zero, &Error{Expected: Summarize(schema), Output: reply, Problems: problems, Err: cause}
	}
	return v, nil
}
