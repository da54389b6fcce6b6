package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/coorflow/coorflow/workflows"
)

// validation is one file's verdict, for validate --json.
type validation struct {
	File  string   `json:"file"`
	Valid bool     `json:"valid"`
	Name  string   `json:"name,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
	// Needs are the tools and functions its Go program must register.
	Needs []string `json:"needs,omitempty"`
	// Executes is what the file will make coorflow do outside its
	// process when it runs: commands, code, URLs (workflows.Effect).
	// Validating it does none of them.
	Executes []workflows.Effect  `json:"executes,omitempty"`
	Problems []workflows.Problem `json:"problems,omitempty"`
	Error    string              `json:"error,omitempty"`
}

func (a *app) validate(ctx context.Context, args []string) error {
	fs := newFlags("validate")
	asJSON := fs.Bool("json", false, "print the verdicts as JSON")
	load := addLoadFlags(fs)
	files, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("validate: give the files to check")
	}
	var out []validation
	var failures []error
	for _, arg := range files {
		v, err := a.validateOne(ctx, arg, load.options())
		out = append(out, v)
		if err != nil {
			failures = append(failures, err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		for _, v := range out {
			if !v.Valid {
				continue
			}
			needs := ""
			if len(v.Needs) > 0 {
				needs = "; its Go program registers " + strings.Join(v.Needs, ", ")
			}
			fmt.Fprintf(a.stdout, "ok  %s  (%s: %d nodes%s)\n", v.File, v.Name, len(v.Nodes), needs)
			printEffects(a.stdout, v.Executes)
		}
	}
	if len(failures) == 0 {
		return nil
	}
	if *asJSON {
		return &usageError{msg: fmt.Sprintf("%d of %d files are invalid", len(failures), len(files))}
	}
	return errors.Join(failures...)
}

// validateOne loads a file and compiles its graph, without models.
func (a *app) validateOne(ctx context.Context, arg string, opts []workflows.LoadOption) (validation, error) {
	v := validation{File: arg}
	wf, err := loadWorkflow(arg, opts...)
	if err == nil {
		_, err = compileOffline(ctx, wf.file, nil, "default")
	}
	var fe *workflows.FileError
	switch {
	case errors.As(err, &fe):
		v.Problems = fe.Problems
		return v, err
	case err != nil:
		v.Error = err.Error()
		return v, &usageError{msg: err.Error()}
	}
	v.Valid, v.Name, v.Nodes, v.Needs = true, wf.file.Name(), wf.file.Nodes(), wf.file.Unregistered()
	v.Executes = wf.file.Effects()
	return v, nil
}

// printEffects writes what a file executes, one line each, under its
// verdict: a file from elsewhere is code its user may not have written.
func printEffects(w io.Writer, effects []workflows.Effect) {
	if len(effects) == 0 {
		return
	}
	fmt.Fprintln(w, "    when it runs, it executes:")
	for _, e := range effects {
		fmt.Fprintf(w, "      %s\n", e)
	}
}

func (a *app) graph(ctx context.Context, args []string) error {
	fs := newFlags("graph")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("graph: give one workflow file")
	}
	wf, err := loadWorkflow(pos[0])
	if err != nil {
		return err
	}
	r, err := compileOffline(ctx, wf.file, nil, "default")
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(a.stdout, r.Mermaid())
	return err
}
