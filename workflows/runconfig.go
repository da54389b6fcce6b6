package workflows

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/coorflow/coorflow/runs"
)

// configValues is what expressions read as config in a run: the file's
// config section, each key the run's config (runs.Config) gives taking
// that value instead. The file's values are the defaults and types of the
// keys a run may set: a key the file does not declare is for Go nodes and
// tools only (runs.ConfigFrom), and a value of another type than the
// default is an error that names the key.
func (sc *scope) configValues(ctx context.Context) (map[string]any, error) {
	if len(sc.config) == 0 {
		return sc.config, nil
	}
	run := runs.ConfigFrom(ctx)
	if len(run) == 0 {
		return sc.config, nil
	}
	var out map[string]any
	for _, k := range slices.Sorted(maps.Keys(sc.config)) {
		v, ok := run[k]
		if !ok || v == nil {
			continue
		}
		def := sc.config[k]
		sh := shapeOfValue(def)
		if !fitsShape(sh, v) {
			return nil, fmt.Errorf("workflows: config.%s: the run's config gives %s; the file declares %s (default %v)", k, describeValue(v), article(sh.kind), def)
		}
		if out == nil {
			out = maps.Clone(sc.config)
		}
		out[k] = sh.normalize(v)
	}
	if out == nil {
		return sc.config, nil
	}
	return out, nil
}

// fitsShape reports whether the JSON value v is of the kind of sh.
func fitsShape(sh *shape, v any) bool {
	switch sh.kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer":
		f, ok := number(v)
		return ok && f == float64(int64(f))
	case "number":
		_, ok := number(v)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

// describeValue names a JSON value for a message: its kind and, when
// short, the value.
func describeValue(v any) string {
	s := fmt.Sprintf("%v", v)
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	kind := "a value"
	switch v.(type) {
	case string:
		kind = "a string"
	case bool:
		kind = "a boolean"
	case float64, int, int64:
		kind = "a number"
	case []any:
		kind = "a list"
	case map[string]any:
		kind = "an object"
	}
	return kind + " (" + s + ")"
}

func article(kind string) string {
	switch kind {
	case "integer", "array", "object":
		return "an " + kind
	}
	return "a " + kind
}

// ConfigSchema is the file's config section as a JSON Schema: an object
// with a property per key, of the type of the key's default and with
// that default. A run's config may give other keys (for Go nodes and
// tools), so the object is open. Nil when the file declares no config.
// Servers show it as an assistant's config_schema.
func (f *File) ConfigSchema() map[string]any {
	if len(f.spec.Config) == 0 {
		return nil
	}
	props := make(map[string]any, len(f.spec.Config))
	for k, def := range f.spec.Config {
		p := map[string]any{"title": k, "default": def}
		if kind := shapeOfValue(def).kind; kind != "any" {
			p["type"] = kind
		}
		props[k] = p
	}
	return map[string]any{"title": f.spec.Name + " config", "type": "object", "properties": props, "additionalProperties": true}
}
