package graph

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by a Saver when a thread or checkpoint does not
// exist. Checkpoint ids are scoped to their thread: an id that belongs to
// another thread is not found.
var ErrNotFound = errors.New("graph: not found")

// A Saver stores checkpoints, channel blobs and task records. The engine
// writes and reads through it; a Saver never interprets the bytes it is
// given. Implementations live in checkpoint/memory, checkpoint/sqlite and
// checkpoint/postgres, and must pass the suite in checkpoint/savertest.
//
// Every method is safe for concurrent use. A thread is identified by its id;
// NS separates the checkpoints of subgraphs from those of the root graph
// ("" is the root).
type Saver interface {
	// PutCheckpoint stores cp together with the channel blobs it introduces,
	// atomically: after an error, neither is visible. Blobs already stored
	// under the same (thread, ns, channel, version) are left unchanged.
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
}

// Source says what produced a checkpoint.
type Source string

// The sources of a checkpoint.
const (
	SourceInput  Source = "input"  // the input of a run was applied
	SourceLoop   Source = "loop"   // a step of the run completed
	SourceUpdate Source = "update" // UpdateState wrote to the newest checkpoint
	SourceFork   Source = "fork"   // UpdateState wrote to an older checkpoint
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
