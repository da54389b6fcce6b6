package savertest

import (
	"strconv"
	"testing"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// BytesWritten reports how many bytes a backend has written to its storage
// so far; benchmarks report the growth per operation. It may be nil when a
// backend has no such measure.
type BytesWritten func(b *testing.B) int64

// SmallStep returns the checkpoint and blob of one small graph step, the
// size the engine writes after a step that changed one channel: about 200
// bytes of meta and a 100-byte blob. step makes ids and versions unique;
// the checkpoint of step 0 starts the thread, that of step n follows the
// one of step n-1.
func SmallStep(thread string, step int) (graph.CheckpointRecord, graph.Blob) {
	id := strconv.Itoa(step)
	parent := ""
	if step > 0 {
		parent = "cp-" + strconv.Itoa(step-1)
	}
	cp := graph.CheckpointRecord{
		Thread:   thread,
		ID:       "cp-" + id,
		ParentID: parent,
		Step:     step,
		Source:   graph.SourceLoop,
		Created:  time.Now(),
		Meta:     smallMeta,
	}
	blob := graph.Blob{Channel: "messages", Version: id, Base: strconv.Itoa(step - 1), Data: smallBlob}
	return cp, blob
}

var (
	smallMeta = []byte(`{"versions":{"messages":"00000000000000000042.0.1234","plan":"00000000000000000007.0.5678",` +
		`"steps":"00000000000000000042.0.9999"},"seen":{"planner":{"messages":"41"}},"next":["team"],"interrupts":[]}`)
	smallBlob = []byte(`[{"role":"ai","parts":[{"text":"The plan has three steps; the first is done and the second runs now."}]}]`)
)

// BenchPutCheckpoint measures PutCheckpoint of one small step (SmallStep)
// per iteration, all in one thread, each checkpoint the child of the one
// before. It reports ns/put and, when written is not nil, written-B/op.
func BenchPutCheckpoint(b *testing.B, s graph.Saver, written BytesWritten) {
	ctx := b.Context()
	blobs := make([]graph.Blob, 1)
	step := 0
	m := start(b, written)
	for b.Loop() {
		var cp graph.CheckpointRecord
		cp, blobs[0] = SmallStep("bench", step)
		if err := s.PutCheckpoint(ctx, cp, blobs); err != nil {
			b.Fatal(err)
		}
		step++
	}
	m.report(b, step)
}

// BenchPutTaskRecords measures PutTaskRecords of one record of about 100
// bytes per iteration, each under a new key of one checkpoint. It reports
// ns/put and, when written is not nil, written-B/op.
func BenchPutTaskRecords(b *testing.B, s graph.Saver, written BytesWritten) {
	ctx := b.Context()
	cp, blob := SmallStep("bench", 0)
	if err := s.PutCheckpoint(ctx, cp, []graph.Blob{blob}); err != nil {
		b.Fatal(err)
	}
	ref := graph.CheckpointRef{Thread: cp.Thread, ID: cp.ID}
	recs := []graph.TaskRecord{{TaskID: "team:7f3a", Kind: "call", Data: smallBlob}}
	n := 0
	m := start(b, written)
	for b.Loop() {
		recs[0].Key = strconv.Itoa(n)
		if err := s.PutTaskRecords(ctx, ref, recs); err != nil {
			b.Fatal(err)
		}
		n++
	}
	m.report(b, n)
}

// meter takes the measures a benchmark reports beyond ns/op.
type meter struct {
	written      BytesWritten
	bytesBefore  int64
	cpuBefore    time.Duration
	cpuAvailable bool
}

// start reads the measures before a benchmark's loop, and asks for
// allocations to be reported.
func start(b *testing.B, written BytesWritten) *meter {
	m := &meter{written: written}
	if written != nil {
		m.bytesBefore = written(b)
	}
	m.cpuBefore, m.cpuAvailable = CPUTime()
	b.ReportAllocs()
	return m
}

// report adds the custom metrics of a benchmark that ran n operations:
// ns/put, the wall time of one; cpu-ns/put, the CPU time the process spent
// per operation (which, unlike wall time, does not grow when other
// processes share the machine's cores); and written-B/op.
func (m *meter) report(b *testing.B, n int) {
	if n == 0 {
		return
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/put")
	if cpu, ok := CPUTime(); ok && m.cpuAvailable {
		b.ReportMetric(float64((cpu-m.cpuBefore).Nanoseconds())/float64(n), "cpu-ns/put")
	}
	if m.written != nil {
		b.ReportMetric(float64(m.written(b)-m.bytesBefore)/float64(n), "written-B/op")
	}
}
