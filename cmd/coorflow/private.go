package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Modes of the database: the directory and files that hold threads,
// agents and recorded runs (model answers, tool results) are the user's
// alone.
const (
	dataDirMode os.FileMode = 0o700
	dbFileMode  os.FileMode = 0o600
)

// private prepares the SQLite database at path so that only its user can
// read it: its directory is created 0700; the file is created 0600 before
// SQLite opens it (SQLite gives its -wal and -shm files the mode of the
// database file, whatever the umask). What an earlier version left open to
// others is tightened, with a notice: the database file and its -wal and
// -shm files to 0600, the data directory to 0700 when it is coorflow's own
// (named .coorflow; another directory is the user's to set).
func (a *app) private(path string) error {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil // SQLite's own names: nothing on disk to create
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dataDirMode); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, dbFileMode)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		return nil // no modes for other users to tighten
	}
	if filepath.Base(dir) == filepath.Base(filepath.Dir(defaultDB)) {
		a.tighten(dir, dataDirMode)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		a.tighten(p, dbFileMode)
	}
	return nil
}

// tighten takes from path the permissions mode does not give, saying so;
// a missing path is left alone and a failure is a notice.
func (a *app) tighten(path string, mode os.FileMode) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	perm := fi.Mode().Perm()
	if perm&^mode == 0 {
		return
	}
	if err := os.Chmod(path, perm&mode); err != nil {
		a.notice("%s can be read by other users (mode %04o) and its mode cannot be changed: %v", path, perm, err)
		return
	}
	a.notice("%s could be read by other users (mode %04o): its mode is now %04o", path, perm, perm&mode)
}
