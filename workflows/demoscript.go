package workflows

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/coorflow/coorflow/llm/scripted"
)

// readDemoScript reads and parses the file's demo script. A file from
// elsewhere names it, and it is read whole, so it must be a regular file
// of at most scripted.MaxScriptBytes in the workflow's directory tree
// (or a root the program allowed, as subgraph files), after resolving
// symbolic links. Errors quote none of its text.
func (f *File) readDemoScript() (scripted.Script, error) {
	name := f.spec.Demo.Script
	real, err := f.resolve("demo script", name)
	if err != nil {
		return scripted.Script{}, err
	}
	info, err := os.Stat(real)
	if err != nil {
		return scripted.Script{}, fmt.Errorf("demo script %s cannot be read: %w", name, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return scripted.Script{}, fmt.Errorf("demo script %s is %s, not a file: a demo script is a YAML file next to the workflow", name, fileKind(info.Mode()))
	}
	if info.Size() > scripted.MaxScriptBytes {
		return scripted.Script{}, fmt.Errorf("demo script %s is larger than %d MiB (%d bytes): a demo script holds a few replies", name, scripted.MaxScriptBytes>>20, info.Size())
	}
	fh, err := os.Open(real)
	if err != nil {
		return scripted.Script{}, fmt.Errorf("demo script %s cannot be read: %w", name, unwrapPath(err))
	}
	defer fh.Close()
	if now, err := fh.Stat(); err != nil || !os.SameFile(info, now) {
		return scripted.Script{}, fmt.Errorf("demo script %s changed while it was read", name)
	}
	script, err := scripted.Load(fh)
	if err != nil {
		return scripted.Script{}, fmt.Errorf("demo script %s: %w", name, err)
	}
	return script, nil
}

// fileKind names what a file that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
