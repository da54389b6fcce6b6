package savertest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// ProcessWrites returns the write system calls the process has made so
// far and the bytes they passed (syscw and wchar of /proc/self/io), and
// whether they could be read (Linux only). For SQLite they count the
// pages appended to the WAL and copied back to the database: exact where
// timings are noisy.
func ProcessWrites() (calls, bytes int64, ok bool) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), ":")
		var dst *int64
		switch name {
		case "syscw":
			dst = &calls
		case "wchar":
			dst = &bytes
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		*dst = n
		found++
	}
	return calls, bytes, sc.Err() == nil && found == 2
}
