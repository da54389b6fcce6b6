package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// A Channel is a named slot of graph state with a value type and a reducer.
// *Key[T] is the only implementation; the interface lets New take keys of
// different value types.
type Channel interface {
	// Name is the channel's name, unique within a graph.
	Name() string
	// Reducer names how writes combine: "last", "append", "messages",
	// "merge", "sum" or "custom".
	Reducer() string
	// ValueType is the Go type of the channel's value.
	ValueType() reflect.Type

	// reduce folds one step's writes into the current value. has reports
	// whether cur holds a value. A last-value channel takes the last write.
	// reduce may append into cur's spare capacity: callers that do not own
	// cur pass view(cur).
	reduce(cur any, has bool, writes []any) any
	// delta folds writes from the zero value, for channels whose reducer
	// allows storing a step's change instead of the whole value.
	delta(writes []any) (any, bool)
	// view adapts a stored value before a node sees it.
	view(v any) any
	encode(v any) ([]byte, error)
	decode(data []byte) (any, error)
	// convert checks a value written through another channel of the same
	// name (a subgraph's key) and returns it as this channel's type.
	convert(v any) (any, error)
}

// Key is a typed handle on a channel: reads return a T and writes take a T,
// checked by the compiler. Create keys once, at package level, with NewKey.
type Key[T any] struct {
	name    string
	red     *reducer[T]
	initial *T
	// check, when set, validates a written value (dynamic keys).
	check func(v any) error
}

// KeyOption configures a key: its reducer or its initial value.
type KeyOption[T any] func(*Key[T])

type reducer[T any] struct {
	kind string
	// fold combines the current value with one step's updates, in order.
	fold func(cur T, updates []T) T
	// canDelta reports that fold(fold(cur, a), b) == fold(cur, [fold(zero, a..b)]),
	// so a checkpoint may store a step's delta instead of the whole value.
	canDelta bool
	// view adapts the stored value for readers (append clips capacity).
	view func(T) T
}

// NewKey declares a channel named name holding a T. Without a reducer
// option the channel keeps the last value written, and two writes to it in
// one step are an error.
func NewKey[T any](name string, opts ...KeyOption[T]) *Key[T] {
	k := &Key[T]{name: name}
	for _, o := range opts {
		o(k)
	}
	return k
}

// Append makes a list channel: each write's elements are appended, in the
// step's write order. Readers get a slice whose capacity is clipped, so
// appending to it in a node never writes into shared state.
func Append[E any]() KeyOption[[]E] {
	return func(k *Key[[]E]) {
		k.red = &reducer[[]E]{
			kind: "append",
			fold: func(cur []E, updates [][]E) []E {
				n := 0
				for _, u := range updates {
					n += len(u)
				}
				cur = slices.Grow(cur, n) // once for the step's writes
				for _, u := range updates {
					cur = append(cur, u...)
				}
				return cur
			},
			canDelta: true,
			view:     func(s []E) []E { return s[:len(s):len(s)] },
		}
	}
}

// Merge makes a map channel: each write's entries are merged into the
// current map, later writes winning. The stored map is never modified in
// place; a step that writes produces a new map.
func Merge[K comparable, V any]() KeyOption[map[K]V] {
	return func(k *Key[map[K]V]) {
		k.red = &reducer[map[K]V]{
			kind: "merge",
			fold: func(cur map[K]V, updates []map[K]V) map[K]V {
				n := len(cur)
				for _, u := range updates {
					n += len(u)
				}
				out := make(map[K]V, n)
				maps.Copy(out, cur)
				for _, u := range updates {
					maps.Copy(out, u)
				}
				return out
			},
			canDelta: true,
		}
	}
}

// Number is the constraint of Sum channels.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64
}

// Sum makes a counter channel: writes are added to the current value.
func Sum[N Number]() KeyOption[N] {
	return func(k *Key[N]) {
		k.red = &reducer[N]{
			kind: "sum",
			fold: func(cur N, updates []N) N {
				for _, u := range updates {
					cur += u
				}
				return cur
			},
			canDelta: true,
		}
	}
}

// Reduce makes a channel with a custom reducer: fn is applied to each write
// of a step in order, starting from the current value. fn must not modify
// cur in place if cur is a map, a slice or a pointer that readers may hold.
func Reduce[T any](fn func(cur, update T) T) KeyOption[T] {
	return func(k *Key[T]) {
		k.red = &reducer[T]{
			kind: "custom",
			fold: func(cur T, updates []T) T {
				for _, u := range updates {
					cur = fn(cur, u)
				}
				return cur
			},
		}
	}
}

// Initial sets the value a channel reads as before anything was written.
func Initial[T any](v T) KeyOption[T] {
	return func(k *Key[T]) { k.initial = &v }
}

// Name returns the channel's name.
func (k *Key[T]) Name() string { return k.name }

// Reducer names how the key's writes combine.
func (k *Key[T]) Reducer() string {
	if k.red == nil {
		return "last"
	}
	return k.red.kind
}

// ValueType returns the Go type of the key's value.
func (k *Key[T]) ValueType() reflect.Type { return reflect.TypeFor[T]() }

// Set returns a write of v to the key's channel. For a reducer channel, v is
// combined with the current value (appended, merged, added).
func (k *Key[T]) Set(v T) Write { return Write{ch: k, value: v} }

// Get returns the key's value in s, or its initial value (the zero value
// unless Initial was given) when nothing was written.
func (k *Key[T]) Get(s State) T {
	v, _ := k.Lookup(s)
	return v
}

// Lookup returns the key's value in s and whether a value was written.
func (k *Key[T]) Lookup(s State) (T, bool) {
	raw, ok := s.lookup(k.name)
	if !ok {
		if k.initial != nil {
			return *k.initial, false
		}
		var zero T
		return zero, false
	}
	v, ok := raw.(T)
	if !ok {
		// A channel of this name with another type: the graph's compiler
		// rejects that for declared keys, so this is a key the graph
		// does not know.
		var zero T
		return zero, false
	}
	if k.red != nil && k.red.view != nil {
		v = k.red.view(v)
	}
	return v, true
}

// AppendTo returns a write that appends items to a list key made with Append.
func AppendTo[E any](k *Key[[]E], items ...E) Write {
	return Write{ch: k, value: items}
}

func (k *Key[T]) start() T {
	if k.initial != nil {
		return *k.initial
	}
	var zero T
	return zero
}

func (k *Key[T]) reduce(cur any, has bool, writes []any) any {
	if k.red == nil {
		return writes[len(writes)-1]
	}
	c, ok := cur.(T)
	if !has || !ok {
		c = k.start()
		if k.red.view != nil {
			c = k.red.view(c) // never append into the shared initial value
		}
	}
	ups := make([]T, len(writes))
	for i, w := range writes {
		ups[i] = w.(T)
	}
	return k.red.fold(c, ups)
}

func (k *Key[T]) delta(writes []any) (any, bool) {
	if k.red == nil || !k.red.canDelta {
		return nil, false
	}
	var zero T
	ups := make([]T, len(writes))
	for i, w := range writes {
		ups[i] = w.(T)
	}
	return k.red.fold(zero, ups), true
}

func (k *Key[T]) view(v any) any {
	if k.red != nil && k.red.view != nil {
		return k.red.view(v.(T))
	}
	return v
}

func (k *Key[T]) encode(v any) ([]byte, error) {
	b, err := json.Marshal(v.(T))
	if err != nil {
		return nil, fmt.Errorf("graph: encode channel %q: %w", k.name, err)
	}
	return b, nil
}

func (k *Key[T]) decode(data []byte) (any, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("graph: decode channel %q as %v: %w", k.name, reflect.TypeFor[T](), err)
	}
	return v, nil
}

func (k *Key[T]) convert(v any) (any, error) {
	if _, ok := v.(T); !ok {
		return nil, fmt.Errorf("graph: channel %q holds %v, not %T", k.name, reflect.TypeFor[T](), v)
	}
	if k.check != nil {
		if err := k.check(v); err != nil {
			return nil, fmt.Errorf("graph: channel %q: %w", k.name, err)
		}
	}
	return v, nil // already a T: re-boxing it would allocate
}

// Write is one write to a channel, made by Key.Set or AppendTo. The zero
// Write is invalid.
type Write struct {
	ch    Channel
	value any
}

// Channel returns the name of the channel written.
func (w Write) Channel() string {
	if w.ch == nil {
		return ""
	}
	return w.ch.Name()
}

// Value returns the value written.
func (w Write) Value() any { return w.value }

// MarshalJSON renders a write as {"channel": name, "value": value}, for
// event consumers.
func (w Write) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Channel string `json:"channel"`
		Value   any    `json:"value"`
	}{w.Channel(), w.value})
}

// compatible reports whether two channels of the same name can stand for
// each other (a subgraph's key and its parent's).
func compatible(a, b Channel) bool {
	return a == b || (a.ValueType() == b.ValueType() && a.Reducer() == b.Reducer() && a.Reducer() != "custom")
}
