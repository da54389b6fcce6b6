package workflows

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/coorflow/coorflow/llm/scripted"
)

// maxSubgraphBytes bounds a subgraph file: each is read whole, up to
// maxFiles of them, and a file from elsewhere names them.
const maxSubgraphBytes = 4 << 20

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
	data, err := readOwnFile(real, "demo script", name, scripted.MaxScriptBytes, "a demo script holds a few replies")
	if err != nil {
		return scripted.Script{}, err
	}
	script, err := scripted.Load(bytes.NewReader(data))
	if err != nil {
		return scripted.Script{}, fmt.Errorf("demo script %s: %w", name, err)
	}
	return script, nil
}

// readOwnFile reads the file at real, a resolved path the workflow names
// as name (its "demo script", "subgraph file"): a regular file of at most
// limit bytes, read whole; why says why that is enough.
func readOwnFile(real, what, name string, limit int64, why string) ([]byte, error) {
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%s %s cannot be read: %w", what, name, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is %s, not a file: a %s is a YAML file next to the workflow", what, name, fileKind(info.Mode()), what)
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s %s is larger than %d MiB (%d bytes): %s", what, name, limit>>20, info.Size(), why)
	}
	fh, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("%s %s cannot be read: %w", what, name, unwrapPath(err))
	}
	defer fh.Close()
	if now, err := fh.Stat(); err != nil || !os.SameFile(info, now) {
		return nil, fmt.Errorf("%s %s changed while it was read", what, name)
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s cannot be read: %w", what, name, unwrapPath(err))
	case int64(len(data)) > limit:
		return nil, fmt.Errorf("%s %s is larger than %d MiB: %s", what, name, limit>>20, why)
	}
	return data, nil
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
