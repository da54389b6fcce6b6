package graph

import (
	"fmt"
	"maps"
)

// NewDynamicKey declares a channel whose values are untyped (any), for
// workflows declared in files rather than in Go. kind names the reducer:
// "last" (or ""), "append", "merge" or "sum":
//   - append keeps a []any; a write of a []any appends its elements, any
//     other write appends itself;
//   - merge keeps a map[string]any; writes must be map[string]any;
//   - sum keeps a float64; writes may be any Go number.
//
// Values decoded from a checkpoint are JSON values (float64, string, bool,
// []any, map[string]any, nil).
func NewDynamicKey(name, kind string) (*Key[any], error) {
	k := &Key[any]{name: name}
	switch kind {
	case "", "last":
	case "append":
		k.red = &reducer[any]{kind: "append", fold: foldAppendAny, canDelta: true, view: viewAppendAny}
	case "merge":
		k.red = &reducer[any]{kind: "merge", fold: foldMergeAny, canDelta: true}
		k.check = func(v any) error {
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf("merge channel takes an object, not %T", v)
			}
			return nil
		}
	case "sum":
		k.red = &reducer[any]{kind: "sum", fold: foldSumAny, canDelta: true}
		k.check = func(v any) error {
			if _, ok := toFloat(v); !ok {
				return fmt.Errorf("sum channel takes a number, not %T", v)
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("graph: channel %q: unknown reducer %q (want last, append, merge or sum)", name, kind)
	}
	return k, nil
}

func foldAppendAny(cur any, updates []any) any {
	list, _ := cur.([]any)
	for _, u := range updates {
		if items, ok := u.([]any); ok {
			list = append(list, items...)
		} else {
			list = append(list, u)
		}
	}
	return list
}

func viewAppendAny(v any) any {
	if list, ok := v.([]any); ok {
		return list[:len(list):len(list)]
	}
	return v
}

func foldMergeAny(cur any, updates []any) any {
	old, _ := cur.(map[string]any)
	out := make(map[string]any, len(old))
	maps.Copy(out, old)
	for _, u := range updates {
		maps.Copy(out, u.(map[string]any))
	}
	return out
}

func foldSumAny(cur any, updates []any) any {
	total, _ := toFloat(cur)
	for _, u := range updates {
		f, _ := toFloat(u)
		total += f
	}
	return total
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}
