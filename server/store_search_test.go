package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/server"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// TestStoreSearchScoresAreTheStoresRanking: a search's items come best
// first with the store's own score (BM25 with recency, store.Hit.Score),
// not a count of matched words (issue 30: an item repeating a query word
// ten times outscored the one that answers the query).
func TestStoreSearchScoresAreTheStoresRanking(t *testing.T) {
	st := storemem.New(store.Config{})
	e := newEnv(t, server.Config{Workflows: workflows(echoGraph(t)), Store: st})
	items := map[string]string{
		"cache":  "redis eviction policy: allkeys-lru evicts the least recently used keys",
		"noise":  "policy policy policy policy policy policy policy policy policy policy",
		"other":  "postgres vacuum settings",
		"second": "memcached eviction is lru per slab class",
	}
	for key, text := range items {
		e.call("PUT", "/store/items", alice, map[string]any{"namespace": []string{"notes"}, "key": key, "value": map[string]any{"text": text}}, http.StatusNoContent, nil)
	}
	hits, err := st.Search(t.Context(), "alice", "redis eviction policy", store.SearchOptions{Prefix: "notes"})
	require.NoError(t, err)
	require.NotEmpty(t, hits)

	var found struct {
		Items []struct {
			Key   string   `json:"key"`
			Score *float64 `json:"score"`
		} `json:"items"`
	}
	e.call("POST", "/store/items/search", alice, map[string]any{"namespace_prefix": []string{"notes"}, "query": "redis eviction policy"}, http.StatusOK, &found)
	require.Len(t, found.Items, len(hits), "every hit of the store, no other")
	for i, it := range found.Items {
		require.NotNil(t, it.Score, "item %s has a score", it.Key)
		assert.InDelta(t, hits[i].Score, *it.Score, 1e-9, "item %d (%s) carries the store's score", i, it.Key)
		if i > 0 {
			assert.GreaterOrEqual(t, *found.Items[i-1].Score, *it.Score, "best first")
		}
	}
	assert.Equal(t, "cache", found.Items[0].Key, "the item that answers the query ranks first")
}
