package memory_test

import (
	"testing"

	"github.com/coorflow/coorflow/checkpoint/memory"
	"github.com/coorflow/coorflow/checkpoint/savertest"
	"github.com/coorflow/coorflow/graph"
)

func TestSaver(t *testing.T) {
	savertest.Run(t, func(t *testing.T) graph.Saver { return memory.New() })
}

func BenchmarkPutCheckpoint(b *testing.B) {
	savertest.BenchPutCheckpoint(b, memory.New(), nil)
}

func BenchmarkPutTaskRecords(b *testing.B) {
	savertest.BenchPutTaskRecords(b, memory.New(), nil)
}
