package dag

import (
	"fmt"
	"slices"
	"strings"
)

// check indexes the tasks by id and reports the first reason they do not
// form a graph Run can run.
func check(tasks []Task) (map[string]int, error) {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if t.ID == "" {
			return nil, fmt.Errorf("%w: task %d has no id", ErrInvalid, i)
		}
		if _, dup := index[t.ID]; dup {
			return nil, fmt.Errorf("%w: task %q is given twice", ErrInvalid, t.ID)
		}
		index[t.ID] = i
	}
	for _, t := range tasks {
		for _, d := range t.Deps {
			if _, ok := index[d]; !ok {
				return nil, fmt.Errorf("%w: task %q depends on %q, which is not a task", ErrInvalid, t.ID, d)
			}
		}
	}
	if c := cycle(tasks, index); c != nil {
		return nil, fmt.Errorf("%w: the tasks depend on each other in a cycle: %s", ErrInvalid, strings.Join(c, " -> "))
	}
	return index, nil
}

// cycle returns the ids of a dependency cycle, the first id repeated at
// the end, or nil.
func cycle(tasks []Task, index map[string]int) []string {
	const (
		unseen = iota
		open
		closed
	)
	state := make([]int, len(tasks))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = open
		path = append(path, tasks[i].ID)
		for _, d := range tasks[i].Deps {
			j := index[d]
			switch state[j] {
			case open:
				at := slices.Index(path, d)
				return append(slices.Clone(path[at:]), d)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = closed
		return nil
	}
	for i := range tasks {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}
