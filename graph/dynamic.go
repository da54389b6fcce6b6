package graph

import (
	"crypto/sha256"
	"encoding/json"
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
//     a message without an id is appended with one, as add_messages
//     gives it a UUID — here derived from the message and its place in
//     the list, so that folding the same writes again (a
//     resume, a recovered step, a replay) gives the same ids;
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
				list = append(list, withMessageID(m, list))
			}
		}
	}
	if list == nil {
		list = []any{}
	}
	return list
}

// withMessageID returns a copy of the id-less message m with the id
// newMessageID gives it at the end of list (another message's id is never
// reused: the first free one of a count after it is).
func withMessageID(m any, list []any) any {
	obj, ok := m.(map[string]any)
	if !ok {
		return m
	}
	taken := func(id string) bool {
		return slices.ContainsFunc(list, func(x any) bool { xid, _ := messageID(x); return xid == id })
	}
	id := newMessageID(obj, len(list), 0)
	for n := 1; taken(id); n++ {
		id = newMessageID(obj, len(list), n)
	}
	out := maps.Clone(obj)
	out["id"] = id
	return out
}

// newMessageID is the id the messages reducer gives a message written
// without one at index i of its list: a version-5-style UUID of the
// message's JSON, i and n (a count that makes it unique in the list).
func newMessageID(m map[string]any, i, n int) string {
	body, _ := json.Marshal(m) // map keys sorted: the same message, the same bytes
	h := sha256.New()
	fmt.Fprintf(h, "coorflow message %d %d\n", i, n)
	h.Write(body)
	sum := h.Sum(nil)
	sum[6] = sum[6]&0x0f | 0x50 // version 5 (name-based)
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
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
