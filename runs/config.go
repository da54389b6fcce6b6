package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/graph"
)

// RuntimeConfig is the graph runtime key (graph.WithRuntime) under which a
// run carries its config: the object as JSON text, so that it travels
// with the run wherever it executes (another replica, a Temporal worker)
// and into its recording, and so that every node reading it gets a copy of
// its own. Config.Option sets it; ConfigFrom reads it.
const RuntimeConfig = "coorflow.config"

// Bounds of a run's config, which comes from callers the server does not
// trust: MaxConfigBytes of JSON, values nested at most MaxConfigDepth
// deep, keys of at most MaxConfigKeyBytes.
const (
	MaxConfigBytes    = 64 << 10
	MaxConfigDepth    = 32
	MaxConfigKeyBytes = 256
)

// Reserved config keys. LangGraph's clients send these in
// config.configurable to say where a run goes, not values for its nodes:
// the transports check them against the request (ParseConfig returns them
// apart, in Reserved) and never pass them to the nodes. Every key that
// starts with ReservedPrefix belongs to the host (the run's owner, thread
// and id: store.RuntimeOwner, graph.RuntimeThread, graph.RuntimeRun) and
// is refused, so that no caller can pass for another owner.
const (
	KeyThreadID     = "thread_id"
	KeyCheckpointID = "checkpoint_id"
	KeyCheckpointNS = "checkpoint_ns"
	KeyRunID        = "run_id"
	ReservedPrefix  = "coorflow."
)

// ErrConfig is the class of every config error (errors.Is).
var ErrConfig = errors.New("runs: invalid config")

// ConfigError is a config that cannot be used: Key says which key (empty:
// the whole object), Reason what is wrong with it.
type ConfigError struct {
	Key    string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return "runs: config: " + e.Reason
	}
	return fmt.Sprintf("runs: config key %q: %s", e.Key, e.Reason)
}

// Is makes a ConfigError match ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Config is a run's config: the values its caller gives its nodes (a model
// choice, a user id, a delay), JSON values by key. Go nodes read it with
// ConfigFrom or ConfigValue; a workflow file's expressions as config.<key>,
// for the keys its config section declares (their defaults).
type Config map[string]any

// Reserved are the reserved keys a config carried (see KeyThreadID...),
// as strings; empty when absent.
type Reserved struct {
	ThreadID, CheckpointID, CheckpointNS, RunID string
}

// ParseConfig reads a config from a JSON object (null or empty: no
// config) and takes its reserved keys apart. It refuses a config larger
// than MaxConfigBytes or nested deeper than MaxConfigDepth, a value that
// is not an object, keys of the host (ReservedPrefix), and reserved keys
// that are not strings.
func ParseConfig(raw []byte) (Config, Reserved, error) {
	var res Reserved
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, res, nil
	}
	if len(raw) > MaxConfigBytes {
		return nil, res, &ConfigError{Reason: fmt.Sprintf("%d bytes of JSON, more than the %d a run's config may have", len(raw), MaxConfigBytes)}
	}
	if raw[0] != '{' {
		return nil, res, &ConfigError{Reason: "must be a JSON object of values by key"}
	}
	if d := jsonDepth(raw); d > MaxConfigDepth {
		return nil, res, &ConfigError{Reason: fmt.Sprintf("values nested %d deep, more than the %d a run's config may have", d, MaxConfigDepth)}
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, res, &ConfigError{Reason: "not a JSON object: " + err.Error()}
	}
	for k, v := range c {
		var dst *string
		switch {
		case k == "":
			return nil, res, &ConfigError{Reason: "a key is empty"}
		case len(k) > MaxConfigKeyBytes:
			return nil, res, &ConfigError{Key: k[:32] + "…", Reason: fmt.Sprintf("longer than %d bytes", MaxConfigKeyBytes)}
		case strings.HasPrefix(k, ReservedPrefix):
			return nil, res, &ConfigError{Key: k, Reason: "keys starting with " + ReservedPrefix + " are the host's own runtime values; a caller cannot set them"}
		case k == KeyThreadID:
			dst = &res.ThreadID
		case k == KeyCheckpointID:
			dst = &res.CheckpointID
		case k == KeyCheckpointNS:
			dst = &res.CheckpointNS
		case k == KeyRunID:
			dst = &res.RunID
		default:
			continue
		}
		s, ok := v.(string)
		if !ok && v != nil {
			return nil, res, &ConfigError{Key: k, Reason: "must be a string"}
		}
		*dst = s
		delete(c, k)
	}
	if len(c) == 0 {
		c = nil
	}
	return c, res, nil
}

// jsonDepth is how deep the arrays and objects of a JSON text nest
// (strings skipped); it reads it once, allocating nothing.
func jsonDepth(b []byte) int {
	depth, most, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}

// Merge returns c with the keys of o added; a key both have must have the
// same value in both (what the Platform's config.configurable and context
// both say), else it is an error.
func (c Config) Merge(o Config) (Config, error) {
	if len(o) == 0 {
		return c, nil
	}
	out := make(Config, len(c)+len(o))
	maps.Copy(out, c)
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if v, ok := c[k]; ok {
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(o[k])
			if !bytes.Equal(a, b) {
				return nil, &ConfigError{Key: k, Reason: fmt.Sprintf("given twice with different values (%s and %s)", clip(a), clip(b))}
			}
		}
		out[k] = o[k]
	}
	return out, nil
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// Encode is the config as the JSON text that RuntimeConfig holds (keys
// sorted); "" for an empty config.
func (c Config) Encode() string {
	if len(c) == 0 {
		return ""
	}
	b, err := json.Marshal(c)
	if err != nil { // values decoded from JSON always encode
		panic(fmt.Sprintf("runs: encode config: %v", err))
	}
	return string(b)
}

// Option gives a run its config (nothing for an empty config): its nodes
// read it with ConfigFrom.
func (c Config) Option() graph.Option {
	return graph.WithRuntime(c.Runtime())
}

// Runtime is the config as runtime values: RuntimeConfig and its text;
// none for an empty config.
func (c Config) Runtime() map[string]any {
	if len(c) == 0 {
		return nil
	}
	return map[string]any{RuntimeConfig: c.Encode()}
}

// ConfigFrom returns the config of the run ctx belongs to (see
// Config.Option): a copy of its own, nil when the run has none.
func ConfigFrom(ctx context.Context) Config {
	s := graph.RuntimeString(ctx, RuntimeConfig)
	if s == "" {
		return nil
	}
	c, err := DecodeConfig(s)
	if err != nil {
		return nil
	}
	return c
}

// DecodeConfig reads the text of RuntimeConfig (a recording's runtime
// values keep it).
func DecodeConfig(s string) (Config, error) {
	if s == "" {
		return nil, nil
	}
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, &ConfigError{Reason: "not a JSON object: " + err.Error()}
	}
	return c, nil
}

// ConfigValue returns the config value key of the run ctx belongs to as a
// T, and whether it has one of that type. JSON numbers convert to any Go
// integer or float type that holds them exactly; objects and arrays
// convert to a T they decode into (a struct, a []string...).
func ConfigValue[T any](ctx context.Context, key string) (T, bool) {
	var zero T
	v, ok := ConfigFrom(ctx)[key]
	if !ok {
		return zero, false
	}
	if t, ok := v.(T); ok {
		return t, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, false
	}
	var t T
	if err := json.Unmarshal(b, &t); err != nil {
		return zero, false
	}
	return t, true
}
