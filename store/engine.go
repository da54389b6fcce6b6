package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// New returns a Store over b, configured by cfg.
func New(b Backend, cfg Config) Store {
	return &core{b: b, cfg: cfg.withDefaults()}
}

// core implements Store over a Backend.
type core struct {
	b   Backend
	cfg Config
}

// MaxOwnerLen is the longest owner id accepted, in bytes.
const MaxOwnerLen = 256

// CheckOwner returns an error (ErrInvalid) for an owner id the store does
// not accept: empty, longer than MaxOwnerLen, not UTF-8, or with control
// characters.
func CheckOwner(owner string) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: empty owner id", ErrInvalid)
	case len(owner) > MaxOwnerLen:
		return fmt.Errorf("%w: owner id of %d bytes is longer than %d", ErrInvalid, len(owner), MaxOwnerLen)
	case !utf8.ValidString(owner) || strings.IndexFunc(owner, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: owner id %q contains invalid characters", ErrInvalid, owner)
	}
	return nil
}

// checkContent reports content that cannot be stored: invalid UTF-8, NUL
// bytes, or invalid JSON for a JSON item.
func checkContent(content string, ct ContentType) error {
	if !utf8.ValidString(content) {
		return fmt.Errorf("%w: content is not valid UTF-8", ErrInvalid)
	}
	if strings.IndexByte(content, 0) >= 0 {
		return fmt.Errorf("%w: content contains a NUL byte", ErrInvalid)
	}
	if ct == ContentJSON && !json.Valid([]byte(content)) {
		return fmt.Errorf("%w: content type is json but the content is not valid JSON", ErrInvalid)
	}
	return nil
}

func (s *core) now() time.Time {
	return s.cfg.Now().UTC().Truncate(time.Microsecond)
}

// check validates owner and path for op.
func (s *core) check(op, owner, path string) error {
	if err := CheckOwner(owner); err != nil {
		return &PathError{Op: op, Owner: owner, Path: path, Err: err, Detail: trimPrefix(err)}
	}
	if err := CheckPath(path); err != nil {
		return &PathError{Op: op, Owner: owner, Path: path, Err: err, Detail: trimPrefix(err)}
	}
	return nil
}

// wrap turns an error from the backend or from an Update callback into
// the error the caller sees.
func wrap(op, owner, path string, err error) error {
	var pe *PathError
	var ce *ConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe), errors.As(err, &ce):
		return err
	case errors.Is(err, ErrNotFound):
		return &PathError{Op: op, Owner: owner, Path: path, Err: ErrNotFound, Detail: "no such item"}
	case errors.Is(err, ErrExists):
		return &PathError{Op: op, Owner: owner, Path: path, Err: ErrExists, Detail: "an item already exists at this path"}
	}
	return &PathError{Op: op, Owner: owner, Path: path, Err: err}
}

func trimPrefix(err error) string { return strings.TrimPrefix(err.Error(), "store: ") }

func (s *core) Get(ctx context.Context, owner, path string) (Item, error) {
	if err := s.check("get", owner, path); err != nil {
		return Item{}, err
	}
	it, err := s.b.Get(ctx, owner, path)
	if err != nil {
		return Item{}, wrap("get", owner, path, err)
	}
	return it, nil
}

func (s *core) Add(ctx context.Context, owner, path, content string, attrs Attrs) (Meta, error) {
	if err := s.check("add", owner, path); err != nil {
		return Meta{}, err
	}
	a := attrs.withDefaults()
	if err := a.validate(); err != nil {
		return Meta{}, &PathError{Op: "add", Owner: owner, Path: path, Err: ErrInvalid, Detail: err.Error()}
	}
	if err := checkContent(content, a.ContentType); err != nil {
		return Meta{}, &PathError{Op: "add", Owner: owner, Path: path, Err: err, Detail: trimPrefix(err)}
	}
	now := s.now()
	it := Item{
		Meta:    Meta{Path: path, Attrs: a, Size: int64(len(content)), Created: now, Updated: now, Revision: 1},
		Content: content,
	}
	err := s.b.Update(ctx, owner, func(tx Tx) error { return tx.Insert(ctx, it) })
	if errors.Is(err, ErrExists) {
		return Meta{}, &PathError{Op: "add", Owner: owner, Path: path, Err: ErrExists,
			Detail: "an item already exists at this path (edit it with the revision you read instead)"}
	}
	if err != nil {
		return Meta{}, wrap("add", owner, path, err)
	}
	return it.Meta, nil
}

func (s *core) Edit(ctx context.Context, owner, path string, e Edit) (Meta, error) {
	if err := s.check("edit", owner, path); err != nil {
		return Meta{}, err
	}
	if err := e.check(); err != nil {
		return Meta{}, &PathError{Op: "edit", Owner: owner, Path: path, Err: err, Detail: trimPrefix(err)}
	}
	var out Meta
	err := s.b.Update(ctx, owner, func(tx Tx) error {
		cur, err := tx.Get(ctx, path)
		if err != nil {
			return err
		}
		next, err := s.edited(ctx, tx, owner, cur, e)
		if err != nil {
			return err
		}
		if cur.ContentType == ContentJSON && s.cfg.KeepRevisions > 0 {
			if err := tx.PutPast(ctx, path, cur.Revision, cur.Content); err != nil {
				return err
			}
		}
		if err := tx.DropPast(ctx, path, next.Revision-int64(max(s.cfg.KeepRevisions, 0))); err != nil {
			return err
		}
		if err := tx.Replace(ctx, next); err != nil {
			return err
		}
		out = next.Meta
		return nil
	})
	if err != nil {
		return Meta{}, wrap("edit", owner, path, err)
	}
	return out, nil
}

// edited returns cur changed by e, merging when e is based on an older
// revision.
func (s *core) edited(ctx context.Context, tx Tx, owner string, cur Item, e Edit) (Item, error) {
	conflict := func(reason string, fields []string) error {
		return &ConflictError{Op: "edit", Owner: owner, Path: cur.Path, Revision: e.Revision,
			Current: cur.Revision, Content: cur.Content, Fields: fields, Reason: reason}
	}
	var content string
	var err error
	switch {
	case e.Revision == cur.Revision:
		content, err = e.apply(cur.Content)
	case e.Revision > cur.Revision:
		return Item{}, conflict("the edit is based on a revision newer than the current one", nil)
	default:
		content, err = s.merge(ctx, tx, cur, e, conflict)
	}
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			return Item{}, err
		}
		return Item{}, &PathError{Op: "edit", Owner: owner, Path: cur.Path, Err: err, Detail: trimPrefix(err)}
	}
	attrs := cur.Attrs.patch(e.Attrs)
	if err := attrs.validate(); err != nil {
		return Item{}, &PathError{Op: "edit", Owner: owner, Path: cur.Path, Err: ErrInvalid, Detail: err.Error()}
	}
	if err := checkContent(content, attrs.ContentType); err != nil {
		return Item{}, &PathError{Op: "edit", Owner: owner, Path: cur.Path, Err: err, Detail: trimPrefix(err)}
	}
	next := cur
	next.Attrs = attrs
	next.Content = content
	next.Size = int64(len(content))
	next.Updated = s.now()
	next.Revision = cur.Revision + 1
	return next, nil
}

// merge applies a stale edit e to the revision it was based on and merges
// the result into cur field by field.
func (s *core) merge(ctx context.Context, tx Tx, cur Item, e Edit, conflict func(string, []string) error) (string, error) {
	if e.Attrs != nil {
		return "", conflict("edits that change attributes are not merged", nil)
	}
	if cur.ContentType != ContentJSON {
		return "", conflict("only JSON objects are merged; read the item again and redo the edit", nil)
	}
	base, err := tx.Past(ctx, cur.Path, e.Revision)
	if errors.Is(err, ErrNotFound) {
		return "", conflict(fmt.Sprintf("revision %d is no longer kept as a merge base", e.Revision), nil)
	}
	if err != nil {
		return "", err
	}
	theirs, err := e.apply(base)
	if err != nil {
		return "", fmt.Errorf("%w (applied to revision %d)", err, e.Revision)
	}
	merged, clashes, err := mergeJSON(base, cur.Content, theirs)
	if err != nil {
		return "", conflict(err.Error(), nil)
	}
	if len(clashes) > 0 {
		return "", conflict("", clashes)
	}
	return merged, nil
}

func (s *core) Delete(ctx context.Context, owner, path string, revision int64) error {
	if err := s.check("delete", owner, path); err != nil {
		return err
	}
	if revision < 1 {
		return &PathError{Op: "delete", Owner: owner, Path: path, Err: ErrInvalid,
			Detail: fmt.Sprintf("a delete needs the revision it is based on (got %d)", revision)}
	}
	err := s.b.Update(ctx, owner, func(tx Tx) error {
		cur, err := tx.Get(ctx, path)
		if err != nil {
			return err
		}
		if cur.Revision != revision {
			return &ConflictError{Op: "delete", Owner: owner, Path: path, Revision: revision,
				Current: cur.Revision, Content: cur.Content}
		}
		return tx.Delete(ctx, path)
	})
	return wrap("delete", owner, path, err)
}

func (s *core) Read(ctx context.Context, owner, path string, offset, limit int64) (Chunk, error) {
	if err := s.check("read", owner, path); err != nil {
		return Chunk{}, err
	}
	if offset < 0 {
		return Chunk{}, &PathError{Op: "read", Owner: owner, Path: path, Err: ErrInvalid,
			Detail: fmt.Sprintf("negative offset %d", offset)}
	}
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	meta, data, err := s.b.ReadRange(ctx, owner, path, offset, limit+utf8.UTFMax-1)
	if err != nil {
		return Chunk{}, wrap("read", owner, path, err)
	}
	if offset > meta.Size {
		return Chunk{}, &PathError{Op: "read", Owner: owner, Path: path, Err: ErrOffset,
			Detail: fmt.Sprintf("offset %d is beyond the end of the item (%d bytes)", offset, meta.Size)}
	}
	data = data[:runeCut(data, int(limit))]
	next := offset + int64(len(data))
	return Chunk{Meta: meta, Content: data, Offset: offset, Next: next, EOF: next >= meta.Size}, nil
}

// runeCut returns where to cut data so that the chunk holds at most limit
// bytes and does not end inside a UTF-8 sequence. When even the first
// character is longer than limit, it returns the end of that character.
func runeCut(data string, limit int) int {
	if len(data) <= limit {
		return len(data)
	}
	for i := limit; i > 0; i-- {
		if isRuneStart(data[i]) {
			return i
		}
	}
	for i := limit + 1; i < len(data); i++ {
		if isRuneStart(data[i]) {
			return i
		}
	}
	return len(data)
}

func (s *core) List(ctx context.Context, owner, prefix string, opts ListOptions) (Page, error) {
	if err := CheckOwner(owner); err != nil {
		return Page{}, &PathError{Op: "list", Owner: owner, Path: prefix, Err: err, Detail: trimPrefix(err)}
	}
	if err := CheckPrefix(prefix); err != nil {
		return Page{}, &PathError{Op: "list", Owner: owner, Path: prefix, Err: err, Detail: trimPrefix(err)}
	}
	limit := opts.Limit
	switch {
	case limit <= 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	metas, err := s.b.List(ctx, owner, prefix, opts.After, limit+1)
	if err != nil {
		return Page{}, wrap("list", owner, prefix, err)
	}
	var p Page
	if len(metas) > limit {
		metas = metas[:limit]
		p.Next = metas[limit-1].Path
	}
	p.Items = metas
	return p, nil
}

func (s *core) Search(ctx context.Context, owner, query string, opts SearchOptions) ([]Hit, error) {
	if err := CheckOwner(owner); err != nil {
		return nil, &PathError{Op: "search", Owner: owner, Path: opts.Prefix, Err: err, Detail: trimPrefix(err)}
	}
	if err := CheckPrefix(opts.Prefix); err != nil {
		return nil, &PathError{Op: "search", Owner: owner, Path: opts.Prefix, Err: err, Detail: trimPrefix(err)}
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, &PathError{Op: "search", Owner: owner, Path: opts.Prefix, Err: ErrInvalid, Detail: "empty query"}
	}
	items, err := s.b.Match(ctx, owner, opts.Prefix, terms)
	if err != nil {
		return nil, wrap("search", owner, opts.Prefix, err)
	}
	hits := rank(items, terms, time.Now())
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}
