package window

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
)

// Offloader keeps text that leaves a window — large tool results, large
// agent outputs, evicted history — and returns a reference to it.
// Offloading the same name and text twice must succeed and return the same
// reference, so a retried call does no harm.
type Offloader interface {
	Offload(ctx context.Context, name, text string) (ref string, err error)
}

// Reader reads offloaded text back page by page: up to limit bytes from a
// byte offset, as store.Store.Read does.
type Reader interface {
	Read(ctx context.Context, ref string, offset, limit int64) (store.Chunk, error)
}

// BoardStore keeps offloaded text on a run's mission board, under
// outputs/, and reads it back as one viewer.
type BoardStore struct {
	board *board.Board
	who   store.Viewer
	opts  []board.Option
}

// NewBoardStore returns a BoardStore over b that reads as who and writes
// with opts (by default outputs are public and listed in the index;
// board.WithVisibility(store.TaskScoped(task)) keeps them in a task).
func NewBoardStore(b *board.Board, who store.Viewer, opts ...board.Option) *BoardStore {
	return &BoardStore{board: b, who: who, opts: opts}
}

// Offload writes text to outputs/<name> on the board and returns its
// path.
func (s *BoardStore) Offload(ctx context.Context, name, text string) (string, error) {
	return s.board.PutOutput(ctx, name, text, s.opts...)
}

// Read reads a board item as the store's viewer.
func (s *BoardStore) Read(ctx context.Context, ref string, offset, limit int64) (store.Chunk, error) {
	return s.board.Read(ctx, s.who, ref, offset, limit)
}

// Names of offloaded text, under the offloader's own prefix.
const (
	toolResultsDir  = "tool-results/"
	agentOutputsDir = "agent-outputs/"
	transcriptsDir  = "transcripts/"
)

// offloadName returns dir/<agent>/<label>-<hash of text> (without the
// agent segment when agent is empty): the hash makes the name unique per
// text and stable across retries.
func offloadName(dir, agent, label, text string) string {
	name := dir
	if agent != "" {
		name += segment(agent) + "/"
	}
	if label != "" {
		name += segment(label) + "-"
	}
	return name + hash(text)
}

// segment makes s usable as one path segment.
func segment(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, strings.TrimSpace(s))
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// hash returns the first 16 hex digits of the SHA-256 of s.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
