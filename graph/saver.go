package graph

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned by a Saver when a thread or checkpoint does not
// exist. Checkpoint ids are scoped to their thread: an id that belongs to
// another thread is not found.
var ErrNotFound = errors.New("graph: not found")

// ErrCheckpointConflict is returned by PutCheckpoint, and by a run or
// UpdateState that it stopped, when another writer advanced the thread
// since the writer read it. The error is a *CheckpointConflictError.
var ErrCheckpointConflict = errors.New("graph: checkpoint conflict")

// CheckpointConflictError reports a checkpoint a Saver refused because the
// newest checkpoint of its thread and namespace is not the one the writer
// expected: another writer (another process, another server) stored one
// in between. Nothing of the refused checkpoint was stored.
type CheckpointConflictError struct {
	Thread string
	NS     string
	// Expected is the newest checkpoint the writer saw ("" for none: it
	// started the thread or namespace); Newest is the one the Saver found
	// ("" for none: the thread was deleted).
	Expected string
	Newest   string
	// Token and LeaseToken are set when the write was refused by a fence:
	// the writer held the thread's lease with fencing token Token, and the
	// thread's lease now has LeaseToken (0: no lease) — another writer
	// took the thread over. Expected and Newest are empty then.
	Token      int64
	LeaseToken int64
}

func (e *CheckpointConflictError) Error() string {
	where := fmt.Sprintf("thread %q", e.Thread)
	if e.NS != "" {
		where += fmt.Sprintf(" namespace %q", e.NS)
	}
	var what string
	switch {
	case e.Token != 0:
		what = fmt.Sprintf("was taken over by another writer: its lease has fencing token %d, this write held token %d", e.LeaseToken, e.Token)
	case e.Expected == "":
		what = fmt.Sprintf("was started by another writer (its newest checkpoint is %q)", e.Newest)
	case e.Newest == "":
		what = fmt.Sprintf("has no checkpoint any more (deleted?), where this write expected %q", e.Expected)
	default:
		what = fmt.Sprintf("was advanced by another writer: its newest checkpoint is %q, not %q as this write expected", e.Newest, e.Expected)
	}
	return "graph: " + where + " " + what + "; read the thread's state again and retry"
}

// Is reports ErrCheckpointConflict.
func (e *CheckpointConflictError) Is(target error) bool { return target == ErrCheckpointConflict }

// A Saver stores checkpoints, channel blobs and task records. The engine
// writes and reads through it; a Saver never interprets the bytes it is
// given. Implementations live in checkpoint/memory, checkpoint/sqlite and
// checkpoint/postgres, and must pass the suite in checkpoint/savertest.
//
// Every method is safe for concurrent use. A thread is identified by its id;
// NS separates the checkpoints of subgraphs from those of the root graph
// ("" is the root).
//
// A thread has one writer at a time, and the storage enforces it, not the
// memory of one process: each namespace of a thread has a head, its newest
// checkpoint, and PutCheckpoint stores a checkpoint only if the head is
// still the one its writer saw (see CheckpointRecord.Head). Of two
// processes that continue a thread from the same checkpoint, the first to
// store the next one wins; the other gets a *CheckpointConflictError, so
// a thread's history never forks silently. Each namespace of a thread has
// its own head: a subgraph's writes do not conflict with its parent's.
type Saver interface {
	// PutCheckpoint stores cp together with the channel blobs it introduces,
	// atomically: after an error, neither is visible. Blobs already stored
	// under the same (thread, ns, channel, version) are left unchanged.
	//
	// It is a compare-and-swap on the head of (cp.Thread, cp.NS): cp is
	// stored, and becomes the head, only if the head is cp.Head, or
	// cp.ParentID when Head is empty; when both are empty, only if the
	// namespace has no checkpoint yet. Otherwise PutCheckpoint stores
	// nothing and returns an error wrapping a *CheckpointConflictError. The
	// check and the write are one atomic step, also between processes
	// sharing the store.
	//
	// Storing a checkpoint id that the thread and namespace already have is
	// an error, and the first one is kept.
	PutCheckpoint(ctx context.Context, cp CheckpointRecord, blobs []Blob) error

	// GetCheckpoint returns the checkpoint ref.ID of ref.Thread in ref.NS,
	// or the thread's newest checkpoint in that namespace when ref.ID is
	// empty. It returns an error wrapping ErrNotFound when there is none.
	GetCheckpoint(ctx context.Context, ref CheckpointRef) (CheckpointRecord, error)

	// ListCheckpoints returns the checkpoints of a thread in ns, newest first
	// by the order in which they were stored (not by timestamp, which may
	// tie), across all branches. An unknown thread gives an empty list; a
	// Before id the thread does not have is ErrNotFound.
	ListCheckpoints(ctx context.Context, thread, ns string, opts ListOptions) ([]CheckpointRecord, error)

	// Blobs returns every stored blob of the named channels in (thread, ns),
	// on every branch, in any order. The engine follows each blob's Base to
	// rebuild a value.
	Blobs(ctx context.Context, thread, ns string, channels []string) ([]Blob, error)

	// PutTaskRecords stores records for tasks of the step that follows the
	// checkpoint ref (ref.ID is never empty here). A record replaces an
	// earlier one with the same (TaskID, Kind, Key). A checkpoint that does
	// not exist is ErrNotFound.
	PutTaskRecords(ctx context.Context, ref CheckpointRef, recs []TaskRecord) error

	// TaskRecords returns the records stored for the step that follows the
	// checkpoint ref, ordered by TaskID, then Kind, then Key.
	TaskRecords(ctx context.Context, ref CheckpointRef) ([]TaskRecord, error)

	// Threads lists threads, most recently updated (newest checkpoint in
	// any namespace) first; Checkpoints counts every namespace, Created and
	// Updated are the times of the oldest and newest checkpoint.
	Threads(ctx context.Context, opts ThreadListOptions) ([]ThreadInfo, error)

	// DeleteThread removes a thread and everything stored for it, in every
	// namespace. Deleting a thread that does not exist is not an error.
	DeleteThread(ctx context.Context, thread string) error
}

// A ThreadSizer is a Saver that can tell how many bytes it keeps for the
// threads whose ids start with prefix — their checkpoints, blobs and task
// records — about as the lengths of their ids, metadata and data add up.
// A server counts what an owner stored with it (its thread ids start with
// the owner's). checkpoint/sqlite, checkpoint/postgres and
// checkpoint/memory are ThreadSizers.
type ThreadSizer interface {
	ThreadBytes(ctx context.Context, prefix string) (int64, error)
}

// PrefixEnd is the least string greater than every string that starts
// with prefix, for a range query prefix <= id < PrefixEnd(prefix); "" when
// there is none (prefix is empty or all 0xff bytes).
func PrefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// A BlobReader is a Saver that can read the blobs of given channel
// versions. When its Saver is one, the engine reads a checkpoint's state
// with BlobsAt, which reads what that state needs, rather than with Blobs,
// which reads every version of its channels: loading a thread then costs
// what its state holds, not what its history does. Savers that are not
// BlobReaders keep working as they are (see ReadBlobsAt).
type BlobReader interface {
	// BlobsAt returns, for each channel of versions (channel -> version)
	// of (thread, ns), the blob stored under that version and the blobs
	// its Base leads to, down to one with an empty Base, in any order,
	// each once. A version that is not stored is left out.
	BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]Blob, error)
}

// ReadBlobsAt returns what s.BlobsAt returns when s is a BlobReader, and
// otherwise every stored blob of the channels of versions (Blobs): a
// superset that rebuilds the same values. Saver wrappers use it to pass
// BlobsAt through.
func ReadBlobsAt(ctx context.Context, s Saver, thread, ns string, versions map[string]string) ([]Blob, error) {
	if br, ok := s.(BlobReader); ok {
		return br.BlobsAt(ctx, thread, ns, versions)
	}
	names := make([]string, 0, len(versions))
	for n := range versions {
		names = append(names, n)
	}
	return s.Blobs(ctx, thread, ns, names)
}

// CheckpointRef names a checkpoint. An empty ID means the newest one.
type CheckpointRef struct {
	Thread string
	NS     string
	ID     string
}

// CheckpointRecord is a checkpoint as a Saver stores it. Meta is the engine's
// encoding of everything else (channel versions, next tasks, interrupts); a
// Saver stores it as opaque bytes.
type CheckpointRecord struct {
	Thread   string
	NS       string
	ID       string
	ParentID string
	Step     int
	Source   Source
	Created  time.Time
	Meta     []byte

	// Head is the newest checkpoint of (Thread, NS) when the writer read
	// the thread, where that is not ParentID: a checkpoint that starts a
	// branch (a fork, or a replay from an older checkpoint) follows
	// ParentID but was written while Head was the newest. Empty means
	// ParentID. It is a condition of PutCheckpoint, not part of the
	// checkpoint: a Saver checks it and does not store it, and records read
	// back have it empty.
	Head string
}

// Source says what produced a checkpoint.
type Source string

// The sources of a checkpoint.
const (
	SourceInput  Source = "input"  // the input of a run was applied
	SourceLoop   Source = "loop"   // a step of the run completed
	SourceUpdate Source = "update" // UpdateState wrote to the newest checkpoint
	SourceFork   Source = "fork"   // UpdateState wrote to an older checkpoint
	SourceReplay Source = "replay" // a run started again from an older checkpoint (FromCheckpoint): the copy that heads the new branch
)

// Blob is one stored version of a channel's value. When Base is empty, Data
// is the full value; otherwise Data is a delta to be applied to the value at
// version Base of the same channel (see Key's reducers).
type Blob struct {
	Channel string
	Version string
	Base    string
	Data    []byte
}

// TaskRecord is something the engine keeps for one task of a step before
// the step's checkpoint exists: its result, a journaled call, an interrupt or
// a resume value. Kind and Key are the engine's; a Saver stores them as given.
type TaskRecord struct {
	TaskID string
	Kind   string
	Key    string
	Data   []byte
}

// ListOptions bounds ListCheckpoints.
type ListOptions struct {
	// Before, when set, returns only checkpoints stored before this one.
	Before string
	// Limit caps the number returned; 0 means no limit.
	Limit int
}

// ThreadListOptions bounds Threads.
type ThreadListOptions struct {
	// Limit caps the number returned; 0 means no limit.
	Limit int
}

// ThreadInfo summarizes a thread.
type ThreadInfo struct {
	ID          string
	Checkpoints int
	Created     time.Time
	Updated     time.Time
}
