package memories_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/internal/pgtest"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memories"
	smem "github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/store/postgres"
	"github.com/coorflow/coorflow/store/sqlite"
	"github.com/coorflow/coorflow/tools"
)

// backends are the stores memories are tested on: each full-text index.
func backends(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return smem.New(store.Config{}) },
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "m.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"postgres": func(t *testing.T) store.Store {
			pool := pgtest.Pool(t)
			s := postgres.New(pool, postgres.WithSchema(pgtest.Schema(t, pool, "coorflow_memories_")))
			require.NoError(t, s.Migrate(t.Context()))
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

func texts(ms []memories.Memory) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func TestRecallFindsAnOwnersMemoriesByTheirWordsAndNoOneElses(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			m, err := memories.New(memories.Config{Store: open(t)})
			require.NoError(t, err)
			ctx := t.Context()
			for _, text := range []string{
				"fsync on macOS does not flush the drive's cache; F_FULLFSYNC does.",
				"SQLite in WAL mode lets readers run during a write.",
				"PostgreSQL group commit batches fsyncs of concurrent transactions.",
			} {
				_, err := m.Remember(ctx, "alice", text, "test")
				require.NoError(t, err)
			}
			_, err = m.Remember(ctx, "bob", "bob's own note about fsync", "test")
			require.NoError(t, err)

			got, err := m.Recall(ctx, "alice", "fsync macOS", 5)
			require.NoError(t, err)
			require.Len(t, got, 2)
			assert.Equal(t, "fsync on macOS does not flush the drive's cache; F_FULLFSYNC does.", got[0].Text, "two terms beat one")
			assert.NotContains(t, texts(got), "bob's own note about fsync", "owners are isolated")
			assert.Greater(t, got[0].Score, got[1].Score)
			assert.Equal(t, "test", got[0].Source)

			got, err = m.Recall(ctx, "bob", "fsync", 5)
			require.NoError(t, err)
			assert.Equal(t, []string{"bob's own note about fsync"}, texts(got))

			got, err = m.Recall(ctx, "carol", "fsync", 5)
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}

// synonyms embeds words of one meaning on one axis: what an embedding
// model does and full text cannot.
type synonyms map[string]int

func (s synonyms) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i], _ = s.EmbedQuery(ctx, t)
	}
	return out, nil
}

func (s synonyms) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	v := make([]float32, 4)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		if axis, ok := s[strings.Trim(w, ".,")]; ok {
			v[axis]++
		}
	}
	return v, nil
}

func TestWithAnEmbedderRecallAlsoFindsMemoriesByMeaning(t *testing.T) {
	emb := synonyms{"car": 0, "automobile": 0, "vehicle": 0, "database": 1, "datastore": 1}
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			m, err := memories.New(memories.Config{Store: open(t), Embedder: emb})
			require.NoError(t, err)
			_, err = m.Remember(t.Context(), "alice", "The automobile was recalled in 2024.", "test")
			require.NoError(t, err)
			_, err = m.Remember(t.Context(), "alice", "The datastore keeps seven days of runs.", "test")
			require.NoError(t, err)

			got, err := m.Recall(t.Context(), "alice", "car", 5)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			assert.Equal(t, "The automobile was recalled in 2024.", got[0].Text, "no word in common: found by its vector")

			plain, err := memories.New(memories.Config{Store: open(t)})
			require.NoError(t, err)
			_, err = plain.Remember(t.Context(), "alice", "The automobile was recalled in 2024.", "test")
			require.NoError(t, err)
			got, err = plain.Recall(t.Context(), "alice", "car", 5)
			require.NoError(t, err)
			assert.Empty(t, got, "full text alone does not find it")
		})
	}
}

func TestMemoriesAreBounded(t *testing.T) {
	s := smem.New(store.Config{})
	m, err := memories.New(memories.Config{Store: s, MaxMemories: 3, MaxText: 20})
	require.NoError(t, err)
	for _, text := range []string{"one alpha", "two alpha", "three alpha", "four alpha"} {
		_, err := m.Remember(t.Context(), "alice", text, "")
		require.NoError(t, err)
	}
	got, err := m.Recall(t.Context(), "alice", "alpha", 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"two alpha", "three alpha", "four alpha"}, texts(got), "the oldest is forgotten first")

	long, err := m.Remember(t.Context(), "alice", strings.Repeat("é", 30), "")
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("é", 10), long.Text, "cut to MaxText bytes on a character boundary")

	_, err = m.Remember(t.Context(), "alice", "   ", "")
	require.ErrorIs(t, err, memories.ErrEmpty)

	got, err = m.Recall(t.Context(), "alice", "alpha", 1000)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(got), memories.MaxLimit)
}

func TestPruneForgetsMemoriesOlderThanMaxAge(t *testing.T) {
	s := smem.New(store.Config{})
	m, err := memories.New(memories.Config{Store: s, MaxAge: time.Hour, Embedder: memories.HashEmbedder{}})
	require.NoError(t, err)
	_, err = m.Remember(t.Context(), "alice", "an old lesson", "")
	require.NoError(t, err)
	n, err := m.Prune(t.Context(), "alice", time.Now().Add(30*time.Minute))
	require.NoError(t, err)
	assert.Zero(t, n, "younger than MaxAge: kept")
	n, err = m.Prune(t.Context(), "alice", time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	page, err := s.List(t.Context(), "alice", "", store.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.Items, "the memory and its vector are gone")
}

func TestTheRememberAndRecallTools(t *testing.T) {
	m, err := memories.New(memories.Config{Store: smem.New(store.Config{}), Owner: "alice"})
	require.NoError(t, err)
	reg := &tools.Registry{}
	for _, tl := range m.Tools() {
		require.NoError(t, reg.Register(tl))
	}
	call := func(name string, args any) tools.Result {
		raw, _ := json.Marshal(args)
		return reg.Run(t.Context(), name, raw, tools.RunOptions{})
	}
	res := call(memories.RememberTool, map[string]string{"text": "The user prefers tables to prose."})
	require.NoError(t, res.Err)
	assert.Contains(t, res.Output, "Remembered (")
	res = call(memories.RecallTool, map[string]any{"query": "tables"})
	require.NoError(t, res.Err)
	assert.Regexp(t, `^- \(\d{4}-\d\d-\d\d\) The user prefers tables to prose.\n$`, res.Output)
	res = call(memories.RecallTool, map[string]any{"query": "zebra"})
	require.NoError(t, res.Err)
	assert.Equal(t, "Nothing remembered matches.", res.Output)
}

// TestALessonRememberedAtOnceByManyAgentsIsStoredOnce: 100 agents of one
// process (two Memories over one store, as two compiled workflows have)
// remembering the same lesson at the same time store it once, and each
// gets that memory back (issue 30: the look for a lesson already learned
// and the store were separate steps, so parallel calls all stored it).
func TestALessonRememberedAtOnceByManyAgentsIsStoredOnce(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			var ms [2]*memories.Memories
			for i := range ms {
				m, err := memories.New(memories.Config{Store: st})
				require.NoError(t, err)
				ms[i] = m
			}
			const n = 100
			ids := make(chan string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					m, err := ms[i%2].Remember(t.Context(), "alice", "SQLite WAL mode lets readers run beside one writer", "agent")
					assert.NoError(t, err)
					ids <- m.ID
				})
			}
			wg.Wait()
			close(ids)
			distinct := map[string]bool{}
			for id := range ids {
				distinct[id] = true
			}
			assert.Len(t, distinct, 1, "every call got the one memory")
			got, err := ms[0].Recall(t.Context(), "alice", "SQLite WAL readers writer", 10)
			require.NoError(t, err)
			assert.Len(t, got, 1, "the lesson is stored once")
		})
	}
}
