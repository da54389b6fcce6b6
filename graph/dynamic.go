package graph

import (
	"fmt"
	"maps"
	"slices"
)

// RemoveAllMessages is the id of a remove message (see NewDynamicKey's
// messages reducer) that removes every message, as LangGraph's
// REMOVE_ALL_MESSAGES.
const RemoveAllMessages = "__remove_all__"

// NewDynamicKey declares a channel whose values are untyped (any), for
// workflows declared in files rather than in Go. kind names the reducer:
// "last" (or ""), "append", "messages", "merge" or "sum":
//   - append keeps a []any; a write of a []any appends its elements, any
//     other write appends itself;
//   - messages keeps a []any of message objects with LangGraph's
//     add_messages semantics: a write (a message, or a list of them)
//     appends each message, except that a message whose "id" is already
//     in the list replaces that one in place, and a message of "type"
//     "remove" removes the message of its id (RemoveAllMessages: all of
//     them; an id not in the list: nothing) and is not kept itself;
//     messages without an id are appended as they are;
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
	case "messages":
		// Not canDelta: a removal or replacement folded into a delta
		// against an empty list would be lost.
		k.red = &reducer[any]{kind: "messages", fold: foldMessagesAny, view: viewAppendAny}
		k.check = checkMessages
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
		return nil, fmt.Errorf("graph: channel %q: unknown reducer %q (want last, append, messages, merge or sum)", name, kind)
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

// foldMessagesAny is LangGraph's add_messages over JSON messages (see
// NewDynamicKey). It never changes cur, which other readers may share.
func foldMessagesAny(cur any, updates []any) any {
	old, _ := cur.([]any)
	list := slices.Clone(old)
	for _, u := range updates {
		items, ok := u.([]any)
		if !ok {
			items = []any{u}
		}
		for _, m := range items {
			id, remove := messageID(m)
			switch {
			case remove && id == RemoveAllMessages:
				list = nil
			case remove:
				list = slices.DeleteFunc(list, func(x any) bool { xid, _ := messageID(x); return xid == id })
			case id != "":
				if i := slices.IndexFunc(list, func(x any) bool { xid, _ := messageID(x); return xid == id }); i >= 0 {
					list[i] = m
					continue
				}
				list = append(list, m)
			default:
				list = append(list, m)
			}
		}
	}
	if list == nil {
		list = []any{}
	}
	return list
}

// messageID returns a message's id and whether it is a removal (type
// "remove").
func messageID(m any) (id string, remove bool) {
	obj, ok := m.(map[string]any)
	if !ok {
		return "", false
	}
	id, _ = obj["id"].(string)
	kind, _ := obj["type"].(string)
	return id, kind == "remove" && id != ""
}

// checkMessages refuses a write to a messages channel that is not a
// message object or a list of them.
func checkMessages(v any) error {
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	for i, m := range items {
		obj, ok := m.(map[string]any)
		if !ok {
			return fmt.Errorf("messages channel takes message objects or lists of them, not %T (item %d)", m, i)
		}
		if id, ok := obj["id"]; ok && id != nil {
			if _, isString := id.(string); !isString {
				return fmt.Errorf("messages channel: a message's id must be a string, not %T (item %d)", id, i)
			}
		}
	}
	return nil
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
