package board

import (
	"context"
	"strconv"

	"github.com/coorflow/coorflow/store"
)

// DefaultWarnSize is the size above which WarnLarge reports an item loaded
// into every prompt: 10 KiB.
const DefaultWarnSize = 10 << 10

// Warning reports an item that is large for where it goes: an item loaded
// into every prompt (TriggerAlways) whose size exceeds the limit.
type Warning struct {
	Owner    string
	Path     string
	Revision int64
	Trigger  Trigger
	Size     int64 // the item's size in bytes
	Limit    int64 // the limit it exceeds
}

// String describes the warning in one line.
func (w Warning) String() string {
	return "board: item " + strconv.Quote(w.Path) + " (owner " + strconv.Quote(w.Owner) + ") is " +
		strconv.FormatInt(w.Size, 10) + " bytes, over the " + strconv.FormatInt(w.Limit, 10) +
		"-byte limit for items with trigger " + string(w.Trigger)
}

// WarnLarge returns s with a size check: after an Add or Edit that leaves
// an item loaded into every prompt (trigger always) larger than limit
// bytes, it calls report with the writer's context, synchronously, from
// the writer's goroutine. A failed write reports nothing. limit 0 means
// DefaultWarnSize; a negative limit or a nil report returns s unchanged.
// Everything else is s's own behaviour.
func WarnLarge(s store.Store, limit int64, report func(context.Context, Warning)) store.Store {
	if limit < 0 || report == nil {
		return s
	}
	if limit == 0 {
		limit = DefaultWarnSize
	}
	return &warnLarge{Store: s, limit: limit, report: report}
}

type warnLarge struct {
	store.Store
	limit  int64
	report func(context.Context, Warning)
}

func (w *warnLarge) Add(ctx context.Context, owner, path, content string, attrs store.Attrs) (store.Meta, error) {
	m, err := w.Store.Add(ctx, owner, path, content, attrs)
	if err == nil {
		w.check(ctx, owner, m)
	}
	return m, err
}

func (w *warnLarge) Edit(ctx context.Context, owner, path string, e store.Edit) (store.Meta, error) {
	m, err := w.Store.Edit(ctx, owner, path, e)
	if err == nil {
		w.check(ctx, owner, m)
	}
	return m, err
}

func (w *warnLarge) check(ctx context.Context, owner string, m store.Meta) {
	if PromptOf(m).Trigger != TriggerAlways || m.Size <= w.limit {
		return
	}
	w.report(ctx, Warning{Owner: owner, Path: m.Path, Revision: m.Revision, Trigger: TriggerAlways, Size: m.Size, Limit: w.limit})
}
