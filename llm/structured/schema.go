package structured

import (
	"fmt"
	"reflect"

	"github.com/coorflow/coorflow/internal/typeschema"
)

// SchemaFor returns the JSON Schema of T; see Schema.
func SchemaFor[T any]() ([]byte, error) {
	return Schema(reflect.TypeFor[T]())
}

// Schema derives a JSON Schema from a Go type, following encoding/json:
//   - bool is "boolean", integers "integer", floats "number", strings and
//     []byte "string", time.Time a "string" of format "date-time",
//     json.RawMessage and interfaces any value;
//   - slices and arrays are "array" with items of the element's schema;
//   - maps with string keys are "object" with additionalProperties of the
//     element's schema;
//   - pointers have their element's schema;
//   - structs are "object" with a property per exported field, named by its
//     json tag ("-" skips it), embedded structs flattened, properties in
//     field order, and additionalProperties false.
//
// A field's `jsonschema` tag adds, comma-separated:
//   - required: the property must be present (nothing else makes it so);
//   - enum=a|b|c: the allowed values, parsed by the field's kind (for a
//     slice, they constrain its items);
//   - format=date-time (or any JSON Schema format);
//   - minimum=N and maximum=N for numbers;
//   - description=text: must come last, as the text runs to the end of the
//     tag and may contain commas.
//
// For example:
//
//	type Step struct {
//		Title string `json:"title" jsonschema:"required,description=What to do, in a few words"`
//		Kind  string `json:"kind" jsonschema:"required,enum=research|processing"`
//		Notes []string `json:"notes,omitempty"`
//	}
//
// Recursive types, channels, functions, complex numbers and maps with
// other keys are errors wrapping ErrSchema. Types with their own
// MarshalJSON are described by their Go structure, which may not match
// their JSON. tools.Typed derives a tool's argument schema the same way.
func Schema(t reflect.Type) ([]byte, error) {
	s, err := typeschema.For(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	return s, nil
}
