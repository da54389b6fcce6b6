package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coorflow/coorflow/graph"
)

// PostgreSQL error codes the Saver tells apart.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

// headsKey is the primary key of the heads table, which a second first
// checkpoint of a namespace violates.
const headsKey = "checkpoint_heads_pkey"

// PutCheckpoint implements graph.Saver. It fails, storing nothing, when a
// checkpoint with the same id already exists in the thread and namespace,
// or when the namespace's newest checkpoint is not the one cp expects.
func (s *Saver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := s.putCheckpoint(ctx, s.pool, cp, blobs); err != nil {
		return fmt.Errorf("postgres: put checkpoint %q of thread %q: %w", cp.ID, cp.Thread, err)
	}
	return nil
}

// dbtx is what the writes run on: the pool, or the transaction of a
// fenced write.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Saver) putCheckpoint(ctx context.Context, db dbtx, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := s.checkReady(ctx); err != nil {
		return err
	}
	channels, versions, bases, data := make([]string, len(blobs)), make([]string, len(blobs)), make([]string, len(blobs)), make([][]byte, len(blobs))
	for i, bl := range blobs {
		channels[i], versions[i], bases[i], data[i] = bl.Channel, bl.Version, bl.Base, notNil(bl.Data)
	}
	args := []any{cp.Thread, cp.NS, cp.ID, cp.ParentID, cp.Step, string(cp.Source), cp.Created, notNil(cp.Meta), channels, versions, bases, data}
	expected := cmp.Or(cp.Head, cp.ParentID)
	var stored int64
	var err error
	if expected == "" {
		var tag pgconn.CommandTag
		tag, err = db.Exec(ctx, s.q.putFirst, args...)
		stored = tag.RowsAffected()
	} else {
		err = db.QueryRow(ctx, s.q.putAfter, append(args, expected)...).Scan(&stored)
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == uniqueViolation && pgErr.ConstraintName == headsKey:
		return s.conflict(ctx, s.pool, cp, expected)
	case pgCode(err) == uniqueViolation:
		return errors.New("already exists")
	case err != nil:
		return err
	case stored == 0:
		return s.conflict(ctx, db, cp, expected)
	}
	return nil
}

// conflict returns the error for cp, which was not stored because the
// newest checkpoint of its namespace is not expected.
func (s *Saver) conflict(ctx context.Context, db dbtx, cp graph.CheckpointRecord, expected string) error {
	var newest string
	err := db.QueryRow(ctx, s.q.newestID, cp.Thread, cp.NS).Scan(&newest)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the newest checkpoint after a conflict: %w", err)
	}
	return &graph.CheckpointConflictError{Thread: cp.Thread, NS: cp.NS, Expected: expected, Newest: newest}
}

// GetCheckpoint implements graph.Saver.
func (s *Saver) GetCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	cp, err := s.getCheckpoint(ctx, ref)
	if err != nil {
		return graph.CheckpointRecord{}, fmt.Errorf("postgres: get checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return cp, nil
}

func (s *Saver) getCheckpoint(ctx context.Context, ref graph.CheckpointRef) (graph.CheckpointRecord, error) {
	if err := s.checkReady(ctx); err != nil {
		return graph.CheckpointRecord{}, err
	}
	var row pgx.Row
	if ref.ID == "" {
		row = s.pool.QueryRow(ctx, s.q.getNewest, ref.Thread, ref.NS)
	} else {
		row = s.pool.QueryRow(ctx, s.q.getCheckpoint, ref.Thread, ref.NS, ref.ID)
	}
	cp, err := scanCheckpoint(row, ref.Thread, ref.NS)
	if errors.Is(err, pgx.ErrNoRows) {
		return cp, graph.ErrNotFound
	}
	return cp, err
}

// ListCheckpoints implements graph.Saver. A thread without checkpoints in ns
// yields an empty list; opts.Before naming no checkpoint of the thread and
// namespace yields an error wrapping graph.ErrNotFound.
func (s *Saver) ListCheckpoints(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	out, err := s.list(ctx, thread, ns, opts)
	if err != nil {
		return nil, fmt.Errorf("postgres: list checkpoints of thread %q namespace %q: %w", thread, ns, err)
	}
	return out, nil
}

func (s *Saver) list(ctx context.Context, thread, ns string, opts graph.ListOptions) ([]graph.CheckpointRecord, error) {
	if err := s.checkReady(ctx); err != nil {
		return nil, err
	}
	// One transaction, so that Before and the list see one snapshot.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	before := int64(math.MaxInt64)
	if opts.Before != "" {
		err := tx.QueryRow(ctx, s.q.getSeq, thread, ns, opts.Before).Scan(&before)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("before %q: %w", opts.Before, graph.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("before %q: %w", opts.Before, err)
		}
	}
	var limit *int64
	if opts.Limit > 0 {
		n := int64(opts.Limit)
		limit = &n
	}
	rows, err := tx.Query(ctx, s.q.list, thread, ns, before, limit)
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
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

// Blobs implements graph.Saver.
func (s *Saver) Blobs(ctx context.Context, thread, ns string, channels []string) ([]graph.Blob, error) {
	out, err := s.blobs(ctx, thread, ns, channels)
	if err != nil {
		return nil, fmt.Errorf("postgres: blobs of thread %q namespace %q: %w", thread, ns, err)
	}
	return out, nil
}

func (s *Saver) blobs(ctx context.Context, thread, ns string, channels []string) ([]graph.Blob, error) {
	if len(channels) == 0 {
		return nil, nil
	}
	if err := s.checkReady(ctx); err != nil {
		return nil, err
	}
	return s.queryBlobs(ctx, s.q.blobs, thread, ns, channels)
}

// BlobsAt implements graph.BlobReader.
func (s *Saver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	var out []graph.Blob
	var err error
	if len(versions) > 0 {
		if err = s.checkReady(ctx); err == nil {
			out, err = s.queryBlobs(ctx, s.q.blobsAt, thread, ns, versions)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: blobs of thread %q namespace %q at their versions: %w", thread, ns, err)
	}
	return out, nil
}

// queryBlobs runs query, a query of blobs, with thread, ns and arg.
func (s *Saver) queryBlobs(ctx context.Context, query, thread, ns string, arg any) ([]graph.Blob, error) {
	rows, err := s.pool.Query(ctx, query, thread, ns, arg)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.Blob, error) {
		var b graph.Blob
		err := row.Scan(&b.Channel, &b.Version, &b.Base, &b.Data)
		return b, err
	})
}

// PutTaskRecords implements graph.Saver. It returns an error wrapping
// graph.ErrNotFound, storing nothing, when the checkpoint does not exist.
func (s *Saver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if err := s.putTaskRecords(ctx, s.pool, ref, recs); err != nil {
		return fmt.Errorf("postgres: put task records of checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return nil
}

func (s *Saver) putTaskRecords(ctx context.Context, db dbtx, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if ref.ID == "" {
		return errors.New("empty checkpoint id")
	}
	if err := s.checkReady(ctx); err != nil {
		return err
	}
	recs = lastOfEachKey(recs)
	tasks, kinds, keys, data := make([]string, len(recs)), make([]string, len(recs)), make([]string, len(recs)), make([][]byte, len(recs))
	for i, r := range recs {
		tasks[i], kinds[i], keys[i], data[i] = r.TaskID, r.Kind, r.Key, notNil(r.Data)
	}
	tag, err := db.Exec(ctx, s.q.upsertTasks, ref.Thread, ref.NS, ref.ID, tasks, kinds, keys, data)
	if pgCode(err) == foreignKeyViolation {
		return graph.ErrNotFound // the checkpoint was deleted meanwhile
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return graph.ErrNotFound
	}
	return nil
}

// lastOfEachKey returns recs without the records that a later one with the
// same (TaskID, Kind, Key) replaces: one statement may not upsert a row
// twice.
func lastOfEachKey(recs []graph.TaskRecord) []graph.TaskRecord {
	if len(recs) < 2 {
		return recs
	}
	type key struct{ task, kind, key string }
	last := make(map[key]int, len(recs))
	for i, r := range recs {
		last[key{r.TaskID, r.Kind, r.Key}] = i
	}
	if len(last) == len(recs) {
		return recs
	}
	out := make([]graph.TaskRecord, 0, len(last))
	for i, r := range recs {
		if last[key{r.TaskID, r.Kind, r.Key}] == i {
			out = append(out, r)
		}
	}
	return out
}

// TaskRecords implements graph.Saver. It returns an error wrapping
// graph.ErrNotFound when the checkpoint does not exist.
func (s *Saver) TaskRecords(ctx context.Context, ref graph.CheckpointRef) ([]graph.TaskRecord, error) {
	out, err := s.tasks(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("postgres: task records of checkpoint %q of thread %q namespace %q: %w", ref.ID, ref.Thread, ref.NS, err)
	}
	return out, nil
}

func (s *Saver) tasks(ctx context.Context, ref graph.CheckpointRef) ([]graph.TaskRecord, error) {
	if err := s.checkReady(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.tasks, ref.Thread, ref.NS, ref.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := false
	out := []graph.TaskRecord{}
	for rows.Next() {
		found = true
		var task, kind, key *string
		var data []byte
		if err := rows.Scan(&task, &kind, &key, &data); err != nil {
			return nil, err
		}
		if task == nil {
			continue // the checkpoint exists but has no records
		}
		out = append(out, graph.TaskRecord{TaskID: *task, Kind: *kind, Key: *key, Data: data})
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
		return nil, fmt.Errorf("postgres: threads: %w", err)
	}
	return out, nil
}

func (s *Saver) threads(ctx context.Context, opts graph.ThreadListOptions) ([]graph.ThreadInfo, error) {
	if err := s.checkReady(ctx); err != nil {
		return nil, err
	}
	var limit *int64
	if opts.Limit > 0 {
		n := int64(opts.Limit)
		limit = &n
	}
	rows, err := s.pool.Query(ctx, s.q.threads, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (graph.ThreadInfo, error) {
		var th graph.ThreadInfo
		err := row.Scan(&th.ID, &th.Checkpoints, &th.Created, &th.Updated)
		th.Created, th.Updated = th.Created.UTC(), th.Updated.UTC()
		return th, err
	})
}

// DeleteThread implements graph.Saver.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	if err := s.deleteThread(ctx, thread); err != nil {
		return fmt.Errorf("postgres: delete thread %q: %w", thread, err)
	}
	return nil
}

func (s *Saver) deleteThread(ctx context.Context, thread string) error {
	if err := s.checkReady(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, q := range s.q.deleteThread {
		b.Queue(q, thread)
	}
	// Without BEGIN, the batch runs as one implicit transaction.
	return s.pool.SendBatch(ctx, b).Close()
}

// checkReady checks ctx and makes sure the schema exists.
func (s *Saver) checkReady(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := s.share.Init(ctx)
	return err
}

// scanCheckpoint reads the checkpointColumns of one row of thread and ns.
func scanCheckpoint(row pgx.Row, thread, ns string) (graph.CheckpointRecord, error) {
	cp := graph.CheckpointRecord{Thread: thread, NS: ns}
	var source string
	var created time.Time
	if err := row.Scan(&cp.ID, &cp.ParentID, &cp.Step, &source, &created, &cp.Meta); err != nil {
		return cp, err
	}
	cp.Source = graph.Source(source)
	cp.Created = created.UTC()
	return cp, nil
}

// notNil returns b, or an empty slice for nil, which pgx would send as NULL.
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// pgCode returns the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
