package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/trace"
)

// notRecorded are the events a run does not record: tokens (the model
// calls hold the whole answers) and the state after every step (the final
// state is in the run's index entry). It records every other event.
var notRecorded = []string{llm.EventToken, graph.EventValues.String()}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "r-" + hex.EncodeToString(b)
}

// newRecorder returns a recorder of the runs of d, or nil (with a notice)
// when d cannot hold them: the runs then go on unrecorded.
func (a *app) newRecorder(ctx context.Context, d *db) *trace.Recorder {
	traces, err := d.traceStore(ctx)
	if err != nil {
		a.notice("runs are not recorded: %v", err)
		return nil
	}
	return trace.NewRecorder(traces, trace.RecorderConfig{Skip: notRecorded, Logger: slog.New(slog.NewTextHandler(a.stderr, nil))})
}

// closeRecorder writes what rec still holds, even after Ctrl-C.
func (a *app) closeRecorder(ctx context.Context, rec *trace.Recorder) {
	if rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := rec.Close(ctx); err != nil {
		a.notice("%v", err)
	}
}
