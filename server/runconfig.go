package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/runs"
)

// configError is a config error as the API answers it: invalid_field, at
// field (and at field.key when the error names a key).
func configError(field string, err error) *apiError {
	var ce *runs.ConfigError
	if errors.As(err, &ce) && ce.Key != "" {
		field += "." + ce.Key
	}
	return fieldErrorf(CodeInvalidField, field, "field %q: %s", field, strings.TrimPrefix(err.Error(), "runs: "))
}

// setConfig sets the config of a /v1 or /mcp run from its request's
// "config": an object of values by key. The thread and the run are the
// URL's (or the tool call's), so the reserved keys are refused here.
func (ru *run) setConfig(raw json.RawMessage, field string) *apiError {
	c, res, err := runs.ParseConfig(raw)
	if err != nil {
		return configError(field, err)
	}
	for _, k := range []struct{ key, v string }{{runs.KeyThreadID, res.ThreadID}, {runs.KeyCheckpointID, res.CheckpointID},
		{runs.KeyCheckpointNS, res.CheckpointNS}, {runs.KeyRunID, res.RunID}} {
		if k.v != "" {
			return fieldErrorf(CodeInvalidField, field+"."+k.key, "field %q is reserved: the thread, checkpoint and run are the request's own, not config values", field+"."+k.key)
		}
	}
	ru.config = c
	return nil
}

// lgConfig is the part of a Platform run's "config" coorflow reads: its
// configurable values. Its other fields (tags, metadata,
// recursion_limit, run_name...) are accepted and ignored.
type lgConfig struct {
	Configurable json.RawMessage `json:"configurable"`
}

// setPlatformConfig sets the config of a Platform run from its request's
// config.configurable and context (LangGraph's runtime context), which
// are merged (a key in both must have one value), over the config of
// the run's assistant (assistantPin.under). The reserved keys say
// where the run goes: thread_id must be the URL's thread, checkpoint_ns
// the root graph's (""), checkpoint_id is the checkpoint to start from
// (as the request's checkpoint_id, which it must agree with), and run_id
// is ignored (the server names its runs).
func (ru *run) setPlatformConfig(req lgRunRequest) *apiError {
	const field = "config.configurable"
	var cfg lgConfig
	if raw := req.Config; len(raw) > 0 && string(raw) != "null" {
		if len(raw) > runs.MaxConfigBytes+64 {
			return configError("config", &runs.ConfigError{Reason: fmt.Sprintf("%d bytes of JSON, more than the %d a run's config may have", len(raw), runs.MaxConfigBytes)})
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fieldErrorf(CodeInvalidField, "config", "field \"config\" must be an object such as {\"configurable\": {\"key\": value}}")
		}
	}
	c, res, err := runs.ParseConfig(cfg.Configurable)
	if err != nil {
		return configError(field, err)
	}
	ctxValues, ctxRes, err := runs.ParseConfig(req.Context)
	if err != nil {
		return configError("context", err)
	}
	if ctxRes != (runs.Reserved{}) {
		return fieldErrorf(CodeInvalidField, "context", "field \"context\" holds values for the nodes; thread_id, checkpoint_id, checkpoint_ns and run_id go in config.configurable")
	}
	if c, err = c.Merge(ctxValues); err != nil {
		return configError("context", err)
	}
	c = req.pin.under(c) // the assistant's config, under the run's own
	if len(c.Encode()) > runs.MaxConfigBytes {
		return configError("context", &runs.ConfigError{Reason: fmt.Sprintf("config.configurable and context together are more than the %d bytes a run's config may have", runs.MaxConfigBytes)})
	}
	switch {
	case res.ThreadID != "" && res.ThreadID != ru.thread:
		return fieldErrorf(CodeInvalidField, field+".thread_id", "field %q is %q, but the run is on thread %q", field+".thread_id", res.ThreadID, ru.thread)
	case res.CheckpointNS != "":
		return fieldErrorf(CodeInvalidField, field+".checkpoint_ns", "field %q must be empty: runs start from a checkpoint of the root graph", field+".checkpoint_ns")
	case res.CheckpointID != "" && ru.from != "" && ru.from != res.CheckpointID:
		return fieldErrorf(CodeInvalidField, field+".checkpoint_id", "field %q is %q, but the request's checkpoint is %q", field+".checkpoint_id", res.CheckpointID, ru.from)
	case res.CheckpointID != "":
		ru.from = res.CheckpointID
	}
	ru.config = c
	return nil
}
