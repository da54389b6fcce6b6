package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/savertest"
)

func BenchmarkPutCheckpoint(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	savertest.BenchPutCheckpoint(b, s, processWrites(b))
}

func BenchmarkPutTaskRecords(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	savertest.BenchPutTaskRecords(b, s, processWrites(b))
}

// processWrites returns a measure of the bytes this process has passed to
// write system calls: while a benchmark runs, the pages SQLite appends to
// its WAL and copies back into the database file. It returns nil where it
// cannot be read.
func processWrites(b *testing.B) savertest.BytesWritten {
	if _, _, ok := savertest.ProcessWrites(); !ok {
		b.Logf("written-B/op not reported: /proc/self/io cannot be read")
		return nil
	}
	return func(b *testing.B) int64 {
		_, n, ok := savertest.ProcessWrites()
		if !ok {
			b.Fatal("/proc/self/io cannot be read")
		}
		return n
	}
}
