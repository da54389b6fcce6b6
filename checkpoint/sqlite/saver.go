package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/coorflow/coorflow/graph"
)

// PutCheckpoint implements graph.Saver. It fails, storing nothing, when a
// checkpoint with the same id already exists in the thread and namespace,
// or when the namespace's newest checkpoint is not the one cp expects.
//
// Checkpoints that wait for the writer together are stored in one
// transaction (see putGroup); each call returns once its own is committed.
func (s *Saver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := s.put(ctx, cp, blobs); err != nil {
		return fmt.Errorf("sqlite: put checkpoint %q of thread %q: %w", cp.ID, cp.Thread, err)
	}
	return nil
}

// insertCheckpoint stores cp, with the blobs of its row (inline, see
// splitBlobs), and the other blobs with the writer's statements, in the
// caller's transaction when there are other blobs.
func insertCheckpoint(ctx context.Context, w *writeStatements, cp graph.CheckpointRecord, inline any, blobs []graph.Blob) error {
	expected := cmp.Or(cp.Head, cp.ParentID)
	res, err := w.insertCheckpoint.ExecContext(ctx,
		cp.Thread, cp.NS, cp.ID, cp.ParentID, cp.Step, string(cp.Source), cp.Created.UnixMicro(), notNil(cp.Meta), inline,
		expected, cp.Thread, cp.NS)
	if isUniqueViolation(err) {
		return errors.New("already exists")
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return conflict(ctx, w, cp, expected)
	}
	for _, b := range blobs {
		if _, err := w.insertBlob.ExecContext(ctx, cp.Thread, cp.NS, b.Channel, b.Version, b.Base, notNil(b.Data)); err != nil {
			return fmt.Errorf("blob %s@%s: %w", b.Channel, b.Version, err)
		}
	}
	return nil
}

// conflict returns the error for cp, which was not stored because the
// newest checkpoint of its namespace is not expected.
func conflict(ctx context.Context, w *writeStatements, cp graph.CheckpointRecord, expected string) error {
	var newest string
	err := w.newestID.QueryRowContext(ctx, cp.Thread, cp.NS).Scan(&newest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read the newest checkpoint after a conflict: %w", err)
	}
	return &graph.CheckpointConflictError{Thread: cp.Thread, NS: cp.NS, Expected: expected, Newest: newest}
}

// GetCheckpoint implements graph.Saver.
func (s *Saver) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	if err := s.init(ctx); err != nil {
		return graph.CheckpointRecord{}, err
	}
	var row *sql.Row
	if ref.ID == "" {
		row = s.r.getNewest.QueryRowContext(ctx, ref.Thread, ref.NS)
	} else {
		row = s.r.getCheckpoint.QueryRowContext(ctx, ref.Thread, ref.NS, ref.ID)
	}
	cp, err := scanCheckpoint(row, ref.Thread, ref.NS)
	if errors.Is(err, sql.ErrNoRows) {
		err = graph.ErrNotFound
	}
	if err != nil {
		return graph.CheckpointRecord{}, fmt.Errorf("sqlite: get checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return cp, nil
}

// ListCheckpoints implements graph.Saver. A thread without checkpoints in ns
// yields an empty list; opts.Before naming no checkpoint of the thread and
// namespace yields an error wrapping graph.ErrNotFound.
func (s *Saver) ListCheckpoints(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	out, err := s.list(ctx, thread, ns, opts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list checkpoints of thread %q namespace %q: %w", thread, ns, err)
	}
	return out, nil
}

func (s *Saver) list(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	if err := s.init(ctx); err != nil {
		return nil, err
	}
	stmt := s.r.list
	before := int64(math.MaxInt64)
	if opts.Before != "" {
		// A read transaction, so that Before and the list see one
		// snapshot. (One statement is one snapshot already.)
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		err = tx.StmtContext(ctx, s.r.getSeq).QueryRowContext(ctx, thread, ns, opts.Before).Scan(&before)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("before %q: %w", opts.Before, graph.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("before %q: %w", opts.Before, err)
		}
		stmt = tx.StmtContext(ctx, stmt)
	}
	limit := int64(-1)
	if opts.Limit > 0 {
		limit = int64(opts.Limit)
	}
	rows, err := stmt.QueryContext(ctx, thread, ns, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []graph.CheckpointRecord
	for rows.Next() {
		cp, err := scanCheckpoint(rows, thread, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, rows.Err()
}

// Blobs implements graph.Saver.
func (s *Saver) Blobs(ctx context.Context, thread, ns string, channels []string) ([]graph.Blob, error) {
	out, err := s.blobs(ctx, thread, ns, channels)
	if err != nil {
		return nil, fmt.Errorf("sqlite: blobs of thread %q namespace %q: %w", thread, ns, err)
	}
	return out, nil
}

func (s *Saver) blobs(ctx context.Context, thread, ns string, channels []string) ([]graph.Blob, error) {
	if len(channels) == 0 {
		return nil, nil
	}
	return s.queryBlobs(ctx, s.r.blobs, thread, ns, channels)
}

// BlobsAt implements graph.BlobReader.
func (s *Saver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	var out []graph.Blob
	var err error
	if len(versions) > 0 {
		out, err = s.queryBlobs(ctx, s.r.blobsAt, thread, ns, versions)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: blobs of thread %q namespace %q at their versions: %w", thread, ns, err)
	}
	return out, nil
}

// queryBlobs runs stmt, a query of blobs, with thread, ns and arg as JSON.
func (s *Saver) queryBlobs(ctx context.Context, stmt *sql.Stmt, thread, ns string, arg any) ([]graph.Blob, error) {
	if err := s.init(ctx); err != nil {
		return nil, err
	}
	js, err := json.Marshal(arg)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, thread, ns, string(js))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []graph.Blob
	for rows.Next() {
		var b graph.Blob
		if err := rows.Scan(&b.Channel, &b.Version, &b.Base, (*blob)(&b.Data)); err != nil {
			return nil, fmt.Errorf("corrupt blob row: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// PutTaskRecords implements graph.Saver. It returns an error wrapping
// graph.ErrNotFound, storing nothing, when the checkpoint does not exist.
func (s *Saver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if len(recs) == 0 {
		return nil
	}
	upsert := func(ctx context.Context, w *writeStatements) error {
		if ref.ID == "" {
			return errors.New("empty checkpoint id")
		}
		for _, r := range recs {
			res, err := w.upsertTask.ExecContext(ctx, ref.Thread, ref.NS, ref.ID, r.TaskID, r.Kind, r.Key, notNil(r.Data))
			if isForeignKeyViolation(err) {
				return graph.ErrNotFound
			}
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				return graph.ErrNotFound
			}
		}
		return nil
	}
	var err error
	if len(recs) == 1 {
		err = s.withWriter(ctx, upsert) // one statement: atomic as it is
	} else {
		err = s.writeTx(ctx, upsert)
	}
	if err != nil {
		return fmt.Errorf("sqlite: put task records of checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return nil
}

// TaskRecords implements graph.Saver. It returns an error wrapping
// graph.ErrNotFound when the checkpoint does not exist.
func (s *Saver) TaskRecords(ctx context.Context, ref graph.CheckpointRef) ([]graph.TaskRecord, error) {
	out, err := s.tasks(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("sqlite: task records of checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return out, nil
}

func (s *Saver) tasks(ctx context.Context, ref graph.CheckpointRef) ([]graph.TaskRecord, error) {
	if err := s.init(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.tasks.QueryContext(ctx, ref.Thread, ref.NS, ref.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := false
	out := []graph.TaskRecord{}
	for rows.Next() {
		found = true
		var task, kind, key sql.Null[string]
		var data nullBlob
		if err := rows.Scan(&task, &kind, &key, &data); err != nil {
			return nil, fmt.Errorf("corrupt task row: %w", err)
		}
		if !task.Valid {
			continue // the checkpoint exists but has no records
		}
		out = append(out, graph.TaskRecord{TaskID: task.V, Kind: kind.V, Key: key.V, Data: data})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, graph.ErrNotFound
	}
	return out, nil
}

// Threads implements graph.Saver. Threads are ordered by the last time a
// checkpoint was stored in them; Checkpoints counts every namespace; Created
// and Updated are the earliest and latest checkpoint timestamps.
func (s *Saver) Threads(ctx context.Context, opts graph.ThreadListOptions) ([]graph.ThreadInfo, error) {
	out, err := s.threads(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: threads: %w", err)
	}
	return out, nil
}

func (s *Saver) threads(ctx context.Context, opts graph.ThreadListOptions) ([]graph.ThreadInfo, error) {
	if err := s.init(ctx); err != nil {
		return nil, err
	}
	limit := int64(-1)
	if opts.Limit > 0 {
		limit = int64(opts.Limit)
	}
	rows, err := s.r.threads.QueryContext(ctx, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []graph.ThreadInfo
	for rows.Next() {
		var th graph.ThreadInfo
		var created, updated int64
		if err := rows.Scan(&th.ID, &th.Checkpoints, &created, &updated); err != nil {
			return nil, fmt.Errorf("corrupt thread row: %w", err)
		}
		th.Created, th.Updated = fromMicros(created), fromMicros(updated)
		out = append(out, th)
	}
	return out, rows.Err()
}

// DeleteThread implements graph.Saver.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	err := s.writeTx(ctx, func(ctx context.Context, w *writeStatements) error {
		for _, stmt := range w.deleteThread {
			if _, err := stmt.ExecContext(ctx, thread); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %q: %w", thread, err)
	}
	return nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanCheckpoint reads the checkpointColumns of one row of thread and ns.
func scanCheckpoint(row scanner, thread, ns string) (graph.CheckpointRecord, error) {
	cp := graph.CheckpointRecord{Thread: thread, NS: ns}
	var source string
	var created int64
	err := row.Scan(&cp.ID, &cp.ParentID, &cp.Step, &source, &created, (*blob)(&cp.Meta))
	if errors.Is(err, sql.ErrNoRows) {
		return cp, err
	}
	if err != nil {
		return cp, fmt.Errorf("corrupt checkpoint row: %w", err)
	}
	cp.Source = graph.Source(source)
	cp.Created = fromMicros(created)
	return cp, nil
}

// blob scans a BLOB column and nothing else: database/sql would turn a
// number or a text that replaced the bytes into their decimal or UTF-8
// form, and a tampered row would read as data.
type blob []byte

// Scan implements sql.Scanner.
func (b *blob) Scan(src any) error {
	v, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("want a blob, got %T", src)
	}
	*b = bytes.Clone(v)
	return nil
}

// nullBlob is a blob that may be NULL, as the columns of an outer join.
type nullBlob []byte

// Scan implements sql.Scanner.
func (b *nullBlob) Scan(src any) error {
	if src == nil {
		*b = nil
		return nil
	}
	return (*blob)(b).Scan(src)
}

// fromMicros is the time us microseconds after the Unix epoch, in UTC.
func fromMicros(us int64) time.Time {
	return time.UnixMicro(us).UTC()
}

// notNil returns b, or an empty slice for nil, which the driver would store
// as NULL.
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// isUniqueViolation reports whether err is SQLite's unique constraint error.
func isUniqueViolation(err error) bool {
	return hasCode(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// isForeignKeyViolation reports whether err is SQLite's foreign key error.
func isForeignKeyViolation(err error) bool {
	return hasCode(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY)
}

func hasCode(err error, codes ...int) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && slices.Contains(codes, se.Code())
}
