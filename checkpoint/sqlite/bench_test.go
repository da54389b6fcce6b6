package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/coorflow/coorflow/checkpoint/savertest"
	"github.com/coorflow/coorflow/internal/sqlitedb"
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

// BenchmarkCommitFloor is the least a durable write costs through the same
// driver, file settings and writer connection as the Saver: a commit of
// one one-row INSERT of an integer into a rowid table (the append of one
// B-tree's last leaf), as one prepared statement on one connection. A
// step's put costs this at least; what it costs above is the Saver's.
func BenchmarkCommitFloor(b *testing.B) {
	db, err := sqlitedb.Open(filepath.Join(b.TempDir(), "floor.db"), sqlitedb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(b.Context(), `CREATE TABLE floor (n INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	insert, err := conn.PrepareContext(b.Context(), `INSERT INTO floor (n) VALUES (?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()
	ctx := context.Background() // as the Saver's writes (withWriter)
	calls0, bytes0, ioOK := savertest.ProcessWrites()
	b.ReportAllocs()
	n := int64(0)
	for b.Loop() {
		n++
		if _, err := insert.ExecContext(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	if calls1, bytes1, ok := savertest.ProcessWrites(); ok && ioOK {
		b.ReportMetric(float64(calls1-calls0)/float64(n), "writes/op")
		b.ReportMetric(float64(bytes1-bytes0)/float64(n), "written-B/op")
	}
}
