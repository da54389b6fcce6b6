package memories

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/store"
)

// Where memories live in an owner's store.
const (
	Prefix       = "memory/"
	vectorPrefix = "memory-vectors/"
)

// Defaults of Config.
const (
	DefaultMaxText     = 2000
	DefaultMaxMemories = 10_000
	DefaultMaxScan     = 2_000
	DefaultMaxAge      = 180 * 24 * time.Hour
	DefaultLimit       = 5
	MaxLimit           = 50
)

// Labels a memory carries.
const (
	LabelThread = "thread"
	LabelSource = "source"
)

// ErrEmpty: a memory without text.
var ErrEmpty = errors.New("memories: nothing to remember")

// Embedder turns texts into vectors; langchaingo's embeddings.Embedder
// is one.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// Config configures Memories.
type Config struct {
	Store store.Store
	// Owner is whose memories are used outside a run that names one.
	Owner string
	// Embedder, optional, adds recall by similarity to full-text recall.
	Embedder Embedder
	// MaxText caps a memory's text in bytes (longer texts are cut);
	// MaxMemories the memories an owner keeps (the oldest are forgotten
	// first); MaxScan the vectors one recall compares; MaxAge how long a
	// memory is kept by Prune. Zero means the default.
	MaxText     int
	MaxMemories int
	MaxScan     int
	MaxAge      time.Duration
}

// Memories remembers and recalls. It is safe for concurrent use.
type Memories struct {
	cfg Config
}

// New returns Memories over cfg.Store.
func New(cfg Config) (*Memories, error) {
	if cfg.Store == nil {
		return nil, errors.New("memories: a store is required")
	}
	if cfg.Owner == "" {
		cfg.Owner = "default"
	}
	cfg.MaxText = cmpOr(cfg.MaxText, DefaultMaxText)
	cfg.MaxMemories = cmpOr(cfg.MaxMemories, DefaultMaxMemories)
	cfg.MaxScan = cmpOr(cfg.MaxScan, DefaultMaxScan)
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	return &Memories{cfg: cfg}, nil
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Memory is one remembered text.
type Memory struct {
	ID      string    `json:"id"`
	Text    string    `json:"text"`
	Thread  string    `json:"thread,omitempty"`
	Source  string    `json:"source,omitempty"`
	Created time.Time `json:"created"`
	// Score ranks a recalled memory: higher is better.
	Score float64 `json:"score,omitempty"`
}

// OwnerOf is the owner whose memories a call in ctx uses.
func (m *Memories) OwnerOf(ctx context.Context) string {
	if o := graph.RuntimeString(ctx, store.RuntimeOwner); o != "" {
		return o
	}
	return m.cfg.Owner
}

// rememberLocks serialize the look for a lesson already learned and the
// store of a new one, per owner, in this process: the agents of a team
// that learn the same lesson at once store it once. Striped (a fixed
// number of locks, chosen by the owner's hash), so owners cost nothing.
// Processes sharing one store can still both store a lesson learned in
// the same instant in each; the next Remember of it finds either.
var (
	rememberLocks [64]sync.Mutex
	rememberSeed  = maphash.MakeSeed()
)

// Remember keeps text as a memory of owner, from source (an agent, a
// node), with the thread of the calling run. A lesson the owner already
// has — the same words, give or take a few (see RelearnedSimilarity) — is not
// stored again: Remember returns the memory that holds it, also when
// several calls in this process remember it at once.
func (m *Memories) Remember(ctx context.Context, owner, text, source string) (Memory, error) {
	text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
	if text == "" {
		return Memory{}, ErrEmpty
	}
	if len(text) > m.cfg.MaxText {
		text = cut(text, m.cfg.MaxText)
	}
	mem, added, err := m.add(ctx, owner, text, source)
	if err != nil || !added {
		return mem, err
	}
	// Outside the lock: eviction reads every memory of the owner.
	if err := m.evict(ctx, owner); err != nil {
		return Memory{}, err
	}
	return mem, nil
}

// add stores text unless the owner already has the lesson (then it
// returns that memory and added false), the look and the store under
// the owner's lock.
func (m *Memories) add(ctx context.Context, owner, text, source string) (mem Memory, added bool, err error) {
	mu := &rememberLocks[maphash.String(rememberSeed, owner)%uint64(len(rememberLocks))]
	mu.Lock()
	defer mu.Unlock()
	if same, ok, err := m.relearned(ctx, owner, text); err != nil || ok {
		return same, false, err
	}
	info, _ := graph.TaskOf(ctx)
	now := time.Now().UTC()
	id := newID(now)
	labels := map[string]string{}
	if info.Thread != "" {
		labels[LabelThread] = cut(info.Thread, store.MaxLabelValueLen)
	}
	if source != "" {
		labels[LabelSource] = cut(source, store.MaxLabelValueLen)
	}
	if m.cfg.Embedder != nil {
		vecs, err := m.cfg.Embedder.EmbedDocuments(ctx, []string{text})
		if err != nil {
			return Memory{}, false, fmt.Errorf("memories: embed: %w", err)
		}
		if len(vecs) != 1 {
			return Memory{}, false, fmt.Errorf("memories: embed: %d vectors for one text", len(vecs))
		}
		if _, err := m.cfg.Store.Add(ctx, owner, vectorPrefix+id, encodeVector(vecs[0]), store.Attrs{}); err != nil {
			return Memory{}, false, fmt.Errorf("memories: remember: %w", err)
		}
	}
	meta, err := m.cfg.Store.Add(ctx, owner, Prefix+id, text, store.Attrs{Labels: labels})
	if err != nil {
		return Memory{}, false, fmt.Errorf("memories: remember: %w", err)
	}
	return Memory{ID: id, Text: text, Thread: labels[LabelThread], Source: labels[LabelSource], Created: meta.Created}, true, nil
}

// newID sorts by time: the oldest memory has the smallest id.
func newID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x-%s", now.UnixMicro(), hex.EncodeToString(b[:]))
}

// cut shortens s to at most n bytes, on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// evict forgets the owner's oldest memories beyond MaxMemories.
func (m *Memories) evict(ctx context.Context, owner string) error {
	metas, err := m.list(ctx, owner, Prefix)
	if err != nil {
		return err
	}
	for len(metas) > m.cfg.MaxMemories {
		if err := m.forget(ctx, owner, metas[0]); err != nil {
			return err
		}
		metas = metas[1:]
	}
	return nil
}

// list returns the metadata of the owner's items under prefix (Prefix or
// vectorPrefix), oldest first: ids sort by time.
func (m *Memories) list(ctx context.Context, owner, prefix string) ([]store.Meta, error) {
	var out []store.Meta
	for meta, err := range store.All(ctx, m.cfg.Store, owner, prefix) {
		if err != nil {
			return nil, fmt.Errorf("memories: list: %w", err)
		}
		out = append(out, meta)
	}
	return out, nil
}

func (m *Memories) forget(ctx context.Context, owner string, meta store.Meta) error {
	if err := m.cfg.Store.Delete(ctx, owner, meta.Path, meta.Revision); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("memories: forget: %w", err)
	}
	id := strings.TrimPrefix(meta.Path, Prefix)
	if v, err := m.cfg.Store.Get(ctx, owner, vectorPrefix+id); err == nil {
		if err := m.cfg.Store.Delete(ctx, owner, v.Path, v.Revision); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("memories: forget: %w", err)
		}
	}
	return nil
}

// Recall returns at most limit of owner's memories that best match
// query: by full text, and by similarity when an embedder is configured,
// the two rankings fused (reciprocal rank fusion).
func (m *Memories) Recall(ctx context.Context, owner, query string, limit int) ([]Memory, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	scores := map[string]float64{}
	found := map[string]Memory{}
	hits, err := m.cfg.Store.Search(ctx, owner, query, store.SearchOptions{Prefix: Prefix, Limit: limit * 4})
	if err != nil {
		return nil, fmt.Errorf("memories: recall: %w", err)
	}
	for rank, h := range hits {
		id := strings.TrimPrefix(h.Path, Prefix)
		scores[id] += 1 / float64(60+rank+1)
		found[id] = Memory{ID: id, Thread: h.Labels[LabelThread], Source: h.Labels[LabelSource], Created: h.Created}
	}
	if m.cfg.Embedder != nil {
		near, err := m.nearest(ctx, owner, query, limit*4)
		if err != nil {
			return nil, err
		}
		for rank, id := range near {
			scores[id] += 1 / float64(60+rank+1)
		}
	}
	ids := make([]string, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if scores[a] != scores[b] {
			if scores[a] > scores[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(b, a) // newer first
	})
	var out []Memory
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		it, err := m.cfg.Store.Get(ctx, owner, Prefix+id)
		if errors.Is(err, store.ErrNotFound) {
			continue // forgotten meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("memories: recall: %w", err)
		}
		out = append(out, Memory{ID: id, Text: it.Content, Thread: it.Labels[LabelThread], Source: it.Labels[LabelSource],
			Created: it.Created, Score: scores[id]})
	}
	return out, nil
}

// nearest returns the ids of the n memories whose vectors are most
// similar to the query's, among the MaxScan newest.
func (m *Memories) nearest(ctx context.Context, owner, query string, n int) ([]string, error) {
	q, err := m.cfg.Embedder.EmbedQuery(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("memories: embed the query: %w", err)
	}
	metas, err := m.list(ctx, owner, vectorPrefix)
	if err != nil {
		return nil, err
	}
	if len(metas) > m.cfg.MaxScan {
		metas = metas[len(metas)-m.cfg.MaxScan:]
	}
	type scored struct {
		id  string
		sim float64
	}
	var all []scored
	for _, meta := range metas {
		it, err := m.cfg.Store.Get(ctx, owner, meta.Path)
		if err != nil {
			continue
		}
		v, err := decodeVector(it.Content)
		if err != nil || len(v) != len(q) {
			continue
		}
		all = append(all, scored{id: strings.TrimPrefix(meta.Path, vectorPrefix), sim: cosine(q, v)})
	}
	slices.SortFunc(all, func(a, b scored) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		}
		return strings.Compare(b.id, a.id)
	})
	var ids []string
	for _, s := range all[:min(n, len(all))] {
		ids = append(ids, s.id)
	}
	return ids, nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

func encodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decodeVector(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil, errors.New("memories: a stored vector is not readable")
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Prune forgets the owner's memories older than MaxAge, oldest first, and
// returns how many it forgot.
func (m *Memories) Prune(ctx context.Context, owner string, now time.Time) (int, error) {
	metas, err := m.list(ctx, owner, Prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, meta := range metas {
		if now.Sub(meta.Created) <= m.cfg.MaxAge {
			break
		}
		if err := m.forget(ctx, owner, meta); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// RelearnedSimilarity is the share of words (Jaccard similarity of the
// two texts' sets of words) above which a new memory is the lesson of an
// existing one, learned again.
const RelearnedSimilarity = 0.8

// relearned returns the owner's memory that already holds text, if any:
// among the best full-text matches of text, one whose words are nearly
// the same.
func (m *Memories) relearned(ctx context.Context, owner, text string) (Memory, bool, error) {
	hits, err := m.cfg.Store.Search(ctx, owner, text, store.SearchOptions{Prefix: Prefix, Limit: 3})
	if errors.Is(err, store.ErrInvalid) {
		return Memory{}, false, nil // no words to search by
	}
	if err != nil {
		return Memory{}, false, fmt.Errorf("memories: remember: %w", err)
	}
	words := wordSet(text)
	for _, h := range hits {
		it, err := m.cfg.Store.Get(ctx, owner, h.Path)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return Memory{}, false, fmt.Errorf("memories: remember: %w", err)
		}
		if jaccard(words, wordSet(it.Content)) >= RelearnedSimilarity {
			return Memory{ID: strings.TrimPrefix(it.Path, Prefix), Text: it.Content, Thread: it.Labels[LabelThread],
				Source: it.Labels[LabelSource], Created: it.Created}, true, nil
		}
	}
	return Memory{}, false, nil
}

// wordSet returns the distinct lower-case words of s.
func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	both := 0
	for w := range a {
		if b[w] {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}
