package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// wipeInitialEnv overwrites with zero bytes the value of every name=value
// entry of the environment block the kernel gave the process (between the
// env_start and env_end addresses of /proc/self/stat), through
// /proc/self/mem. The Go runtime copied that block at start-up and never
// reads it again.
func wipeInitialEnv(name string) error {
	start, end, err := envBlock()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return fmt.Errorf("read the environment block: %w", err)
	}
	prefix := []byte(name + "=")
	off := 0
	for entry := range bytes.SplitSeq(block, []byte{0}) {
		if bytes.HasPrefix(entry, prefix) && len(entry) > len(prefix) {
			at := int64(start) + int64(off+len(prefix))
			if _, err := mem.WriteAt(make([]byte, len(entry)-len(prefix)), at); err != nil {
				return fmt.Errorf("wipe the environment block: %w", err)
			}
		}
		off += len(entry) + 1
	}
	return nil
}

// envBlock returns the addresses of the initial environment block: fields
// 50 and 51 of /proc/self/stat (proc(5)).
func envBlock() (start, end uint64, err error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("unreadable /proc/self/stat")
	}
	fields := bytes.Fields(stat[i+1:]) // from field 3
	if len(fields) < 51-2 {
		return 0, 0, errors.New("/proc/self/stat has no env_start and env_end (Linux 3.5 or later has them)")
	}
	start, err1 := strconv.ParseUint(string(fields[50-3]), 10, 64)
	end, err2 := strconv.ParseUint(string(fields[51-3]), 10, 64)
	if err := errors.Join(err1, err2); err != nil || end <= start {
		return 0, 0, fmt.Errorf("unreadable env_start and env_end in /proc/self/stat: %v", err)
	}
	return start, end, nil
}
