package sqlite_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// write system calls (wchar in /proc/self/io): while a benchmark runs, the
// pages SQLite appends to its WAL and copies back into the database file.
// It returns nil where /proc/self/io cannot be read.
func processWrites(b *testing.B) savertest.BytesWritten {
	if _, err := readWchar(); err != nil {
		b.Logf("written-B/op not reported: %v", err)
		return nil
	}
	return func(b *testing.B) int64 {
		n, err := readWchar()
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
}

func readWchar() (int64, error) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, os.ErrNotExist
}
