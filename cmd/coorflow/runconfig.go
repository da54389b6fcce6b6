package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coorflow/coorflow/runs"
)

// parseConfigFlags reads the --config flags of run, in order, into the
// run's config: KEY=VALUE sets one key (VALUE is JSON when it reads as
// JSON, such as 3, true or {"a": 1}, a string otherwise); @FILE adds the
// keys of a JSON object file. A later flag's key replaces an earlier one.
// The config is bounded and checked as a server checks a caller's
// (runs.ParseConfig): thread_id and the other reserved keys are the
// flags' (--thread), not config values.
func parseConfigFlags(specs []string) (runs.Config, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	all := map[string]json.RawMessage{}
	for _, s := range specs {
		if name, ok := strings.CutPrefix(s, "@"); ok {
			b, err := readLimited(name, runs.MaxConfigBytes)
			if err != nil {
				return nil, usagef("--config %s: %v", s, err)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
				return nil, usagef("--config %s: want a JSON object of values by key (%v)", s, errOr(err, "null"))
			}
			for k, v := range obj {
				all[k] = v
			}
			continue
		}
		key, value, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return nil, usagef("--config %s: want KEY=VALUE (VALUE is JSON or text) or @FILE (a JSON object)", s)
		}
		if !json.Valid([]byte(value)) {
			value = mustJSON(value)
		}
		all[key] = json.RawMessage(value)
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return nil, usagef("--config: %v", err)
	}
	c, res, err := runs.ParseConfig(raw)
	if err != nil {
		return nil, usagef("--config: %s", strings.TrimPrefix(err.Error(), "runs: "))
	}
	if res != (runs.Reserved{}) {
		return nil, usagef("--config: thread_id, checkpoint_id, checkpoint_ns and run_id are reserved: give the thread with --thread")
	}
	return c, nil
}

// readLimited reads a file of at most limit bytes.
func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("more than the %d bytes a run's config may have", limit)
	}
	return b, nil
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}
