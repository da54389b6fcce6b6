package metaprompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/board"
)

// CachePrefix is where cached prompts live in the store:
// team/metaprompts/<Key>.
const CachePrefix = "team/metaprompts/"

// Entry is a cached prompt, stored as JSON.
type Entry struct {
	Brief   Brief     `json:"brief"`
	Model   string    `json:"model"`
	Prompt  string    `json:"prompt"`
	Created time.Time `json:"created"`
}

// cacheAttrs are the attributes of a cache entry: written by a model, read
// by code, never loaded into a prompt or listed in an index.
var cacheAttrs = store.Attrs{
	ContentType: store.ContentJSON,
	Labels: board.Prompt{Priority: board.PriorityLow, Trust: board.TrustModel,
		Sensitivity: board.SensitivityInternal, Trigger: board.TriggerSearch}.Labels(),
}

// ownerOf returns whose cache entries an expansion in ctx reads and
// writes: the owner of the run ctx belongs to (store.RuntimeOwner, as the
// HTTP server sets it), so that one compiled workflow serving many owners
// never shares a prompt between them; Config.Owner outside such a run.
func (e *Expander) ownerOf(ctx context.Context) string {
	if o := graph.RuntimeString(ctx, store.RuntimeOwner); o != "" {
		return o
	}
	return e.owner
}

// lookup returns the cached prompt for key, with Cached set, or a zero
// Prompt on a miss. A stored entry that does not decode or no longer
// passes Check is a miss; its revision is returned so that save replaces
// it.
func (e *Expander) lookup(ctx context.Context, key string) (Prompt, int64, error) {
	if e.cache == nil {
		return Prompt{}, 0, nil
	}
	it, err := e.cache.Get(ctx, e.ownerOf(ctx), CachePrefix+key)
	if errors.Is(err, store.ErrNotFound) {
		return Prompt{}, 0, nil
	}
	if err != nil {
		return Prompt{}, 0, fmt.Errorf("%w: read %s: %w", ErrCache, CachePrefix+key, err)
	}
	var ent Entry
	if json.Unmarshal([]byte(it.Content), &ent) != nil || len(Check(ent.Prompt)) > 0 {
		return Prompt{}, it.Revision, nil
	}
	return Prompt{Text: ent.Prompt, Model: ent.Model, Key: key, Created: ent.Created,
		Cached: true, Tokens: llm.EstimateTokens(ent.Prompt)}, 0, nil
}

// save stores p under its key: a new item when rev is 0, a replacement of
// revision rev otherwise. Losing a race to another writer of the same key
// is not an error: both wrote a prompt for the same brief and model.
func (e *Expander) save(ctx context.Context, b Brief, p Prompt, rev int64) error {
	if e.cache == nil {
		return nil
	}
	raw, err := json.Marshal(Entry{Brief: b, Model: p.Model, Prompt: p.Text, Created: p.Created})
	if err != nil {
		return fmt.Errorf("%w: encode entry: %w", ErrCache, err)
	}
	path := CachePrefix + p.Key
	owner := e.ownerOf(ctx)
	if rev == 0 {
		_, err = e.cache.Add(ctx, owner, path, string(raw), cacheAttrs)
	} else {
		_, err = e.cache.Edit(ctx, owner, path, store.Replace(rev, string(raw)))
	}
	if err == nil || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict) {
		return nil
	}
	return fmt.Errorf("%w: write %s: %w", ErrCache, path, err)
}
