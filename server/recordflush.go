package server

import (
	"context"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/trace"
)

// recordingSaver is the Saver of a run a replica executes (a claim) that
// flushes the run's recording before each write: a replica that takes
// the run over from a checkpoint or a task record continues a recording
// that has every event before it (the usage of the calls made before the
// takeover included), as the claim's Saver makes the event log do. A
// recording that cannot be flushed does not stop the run; Finish reports
// it.
type recordingSaver struct {
	graph.Saver
	rec *trace.RunRecorder
}

func (r *recordingSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	_ = r.rec.Flush(ctx)
	return r.Saver.PutCheckpoint(ctx, cp, blobs)
}

func (r *recordingSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	_ = r.rec.Flush(ctx)
	return r.Saver.PutTaskRecords(ctx, ref, recs)
}

// BlobsAt passes graph.BlobReader through.
func (r *recordingSaver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	return graph.ReadBlobsAt(ctx, r.Saver, thread, ns, versions)
}
