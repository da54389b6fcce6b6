package main

import (
	"os"
	"path/filepath"
	"runtime"

	"github.com/coorflow/coorflow/internal/sqlitedb"
)

// private takes from the SQLite database at path what an earlier version
// left open to other users, with a notice: the database file and its -wal
// and -shm files are tightened to sqlitedb.FileMode (0600), the data
// directory to sqlitedb.DirMode (0700) when it is coorflow's own (named
// .coorflow; another directory is the user's to set). What is missing is
// left to sqlitedb.Open, which creates it with those modes.
func (a *app) private(path string) {
	if runtime.GOOS == "windows" {
		return // no modes for other users to tighten
	}
	dir := filepath.Dir(path)
	if filepath.Base(dir) == filepath.Base(filepath.Dir(defaultDB)) {
		a.tighten(dir, sqlitedb.DirMode)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		a.tighten(p, sqlitedb.FileMode)
	}
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
