package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/store"
)

// The Platform's store is coorflow's store (Config.Store), per owner: the
// item (namespace ["a", "b"], key "k") is the store item at path "a/b/k",
// its value a JSON object stored as JSON content.

// lgItem is a store item as the Platform shows it.
type lgItem struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Score     *float64        `json:"score,omitempty"`
}

// maxStoreScan bounds the items a store search or namespace listing reads.
const maxStoreScan = 1000

// storeFor returns Config.Store, or answers 501 when the server has none.
func (s *Server) storeFor(w http.ResponseWriter) store.Store {
	if s.cfg.Store == nil {
		writeError(w, errorf(http.StatusNotImplemented, CodeNotServed, "this server has no store (Config.Store): the /store routes are off"))
	}
	return s.cfg.Store
}

// itemPath is the store path of (namespace, key).
func itemPath(ns []string, key string) (string, *apiError) {
	if len(ns) == 0 {
		return "", fieldErrorf(CodeInvalidField, "namespace", "field \"namespace\" must name at least one label")
	}
	for _, l := range ns {
		if l == "" || strings.ContainsAny(l, "./") {
			return "", fieldErrorf(CodeInvalidField, "namespace", "namespace label %q must be non-empty, without '.' or '/'", l)
		}
	}
	if key == "" || strings.Contains(key, "/") {
		return "", fieldErrorf(CodeInvalidField, "key", "field \"key\" must be non-empty, without '/', not %q", key)
	}
	p := strings.Join(ns, "/") + "/" + key
	if err := store.CheckPath(p); err != nil {
		return "", fieldErrorf(CodeInvalidField, "key", "%v", err)
	}
	return p, nil
}

// itemView turns a stored item into the Platform's.
func itemView(it store.Item) lgItem {
	segs := strings.Split(it.Path, "/")
	v := json.RawMessage(it.Content)
	if it.ContentType != store.ContentJSON {
		v, _ = json.Marshal(map[string]string{"content": it.Content})
	}
	return lgItem{Namespace: segs[:len(segs)-1], Key: segs[len(segs)-1], Value: v, CreatedAt: it.Created, UpdatedAt: it.Updated}
}

type lgPutItemRequest struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Index     json.RawMessage `json:"index"`
	TTL       json.RawMessage `json:"ttl"`
}

func (s *Server) lgPutItem(w http.ResponseWriter, r *http.Request) {
	st := s.storeFor(w)
	if st == nil {
		return
	}
	var req lgPutItemRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	p, e := itemPath(req.Namespace, req.Key)
	if e != nil {
		writeError(w, e)
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(req.Value, &obj); err != nil || obj == nil {
		writeError(w, fieldErrorf(CodeInvalidField, "value", "field \"value\" must be a JSON object"))
		return
	}
	if len(req.TTL) > 0 && string(req.TTL) != "null" {
		writeError(w, fieldErrorf(CodeInvalidField, "ttl", "field \"ttl\" is not supported: items are kept until deleted"))
		return
	}
	owner, ctx := ownerFrom(r.Context()), r.Context()
	// The bytes the item adds are taken from the owner's quota before it
	// is written, in one step; what it replaced is corrected after.
	size, prev := itemBytes(p, int64(len(req.Value))), int64(0)
	if cur, err := st.Get(ctx, owner, p); err == nil {
		prev = itemBytes(p, cur.Size)
	} else if !errors.Is(err, store.ErrNotFound) {
		writeError(w, s.storeError(r, err))
		return
	}
	delta := size - prev
	if delta > 0 {
		if e := s.takeStorage(ctx, owner, storedItems, delta); e != nil {
			writeError(w, e)
			return
		}
	} else {
		s.storage.add(owner, storedItems, delta)
	}
	replaced := int64(0)
	_, err := st.Add(ctx, owner, p, string(req.Value), store.Attrs{ContentType: store.ContentJSON})
	if errors.Is(err, store.ErrExists) {
		var cur store.Item
		if cur, err = st.Get(ctx, owner, p); err == nil {
			ed := store.Replace(cur.Revision, string(req.Value))
			ed.Attrs = &store.Attrs{ContentType: store.ContentJSON}
			if _, err = st.Edit(ctx, owner, p, ed); err == nil {
				replaced = itemBytes(p, cur.Size)
			}
		}
	}
	if err != nil {
		s.storage.add(owner, storedItems, -delta)
		writeError(w, s.storeError(r, err))
		return
	}
	s.storage.add(owner, storedItems, prev-replaced) // another request changed it meanwhile
	w.WriteHeader(http.StatusNoContent)
}

// storeError turns a store failure into an answer.
func (s *Server) storeError(r *http.Request, err error) *apiError {
	var ce *store.ConflictError
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		return fieldErrorf(CodeInvalidField, "key", "%v", err)
	case errors.As(err, &ce):
		return errorf(http.StatusConflict, CodeThreadBusy, "the item was changed by another request at the same time: try again")
	}
	return s.internal(r, err)
}

func (s *Server) lgGetItem(w http.ResponseWriter, r *http.Request) {
	st := s.storeFor(w)
	if st == nil {
		return
	}
	q := r.URL.Query()
	p, e := itemPath(strings.Split(q.Get("namespace"), "."), q.Get("key"))
	if e != nil {
		writeError(w, e)
		return
	}
	it, err := st.Get(r.Context(), ownerFrom(r.Context()), p)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusOK, nil) // the SDK's getItem answers null
	case err != nil:
		writeError(w, s.storeError(r, err))
	default:
		writeJSON(w, http.StatusOK, itemView(it))
	}
}

type lgDeleteItemRequest struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
}

func (s *Server) lgDeleteItem(w http.ResponseWriter, r *http.Request) {
	st := s.storeFor(w)
	if st == nil {
		return
	}
	var req lgDeleteItemRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	p, e := itemPath(req.Namespace, req.Key)
	if e != nil {
		writeError(w, e)
		return
	}
	owner := ownerFrom(r.Context())
	it, err := st.Get(r.Context(), owner, p)
	if err == nil {
		if err = st.Delete(r.Context(), owner, p, it.Revision); err == nil {
			s.storage.add(owner, storedItems, -itemBytes(p, it.Size))
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		writeError(w, s.storeError(r, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type lgSearchItemsRequest struct {
	NamespacePrefix []string       `json:"namespace_prefix"`
	Filter          map[string]any `json:"filter"`
	Limit           int            `json:"limit"`
	Offset          int            `json:"offset"`
	Query           string         `json:"query"`
	RefreshTTL      *bool          `json:"refresh_ttl"`
}

// nsPrefix is the store path prefix of a namespace prefix.
func nsPrefix(ns []string) (string, *apiError) {
	for _, l := range ns {
		if l == "" || strings.ContainsAny(l, "./") {
			return "", fieldErrorf(CodeInvalidField, "namespace_prefix", "namespace label %q must be non-empty, without '.' or '/'", l)
		}
	}
	if len(ns) == 0 {
		return "", nil
	}
	return strings.Join(ns, "/") + "/", nil
}

// lgSearchItems lists the items under a namespace prefix whose value has
// every field of filter; with a query, those that match it, best first.
func (s *Server) lgSearchItems(w http.ResponseWriter, r *http.Request) {
	st := s.storeFor(w)
	if st == nil {
		return
	}
	var req lgSearchItemsRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	prefix, e := nsPrefix(req.NamespacePrefix)
	if e != nil {
		writeError(w, e)
		return
	}
	owner, ctx := ownerFrom(r.Context()), r.Context()
	var paths []string
	scores := map[string]float64{}
	if req.Query != "" {
		hits, err := st.Search(ctx, owner, req.Query, store.SearchOptions{Prefix: prefix, Limit: maxStoreScan})
		if err != nil {
			writeError(w, s.storeError(r, err))
			return
		}
		for _, h := range hits {
			paths = append(paths, h.Path)
			scores[h.Path] = h.Score
		}
	} else {
		metas, err := listAll(r, st, owner, prefix)
		if err != nil {
			writeError(w, s.storeError(r, err))
			return
		}
		for _, m := range metas {
			paths = append(paths, m.Path)
		}
	}
	out := []lgItem{}
	for _, p := range paths {
		it, err := st.Get(ctx, owner, p)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			writeError(w, s.storeError(r, err))
			return
		}
		v := itemView(it)
		var fields map[string]any
		_ = json.Unmarshal(v.Value, &fields)
		if !metadataMatches(fields, req.Filter) {
			continue
		}
		if sc, ok := scores[p]; ok {
			v.Score = &sc
		}
		out = append(out, v)
	}
	page, e := pageOf(out, req.Limit, req.Offset)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": page})
}

// listAll lists the owner's items under prefix, at most maxStoreScan.
func listAll(r *http.Request, st store.Store, owner, prefix string) ([]store.Meta, error) {
	var out []store.Meta
	for m, err := range store.All(r.Context(), st, owner, prefix) {
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		if len(out) == maxStoreScan {
			break
		}
	}
	return out, nil
}

type lgNamespacesRequest struct {
	Prefix   []string `json:"prefix"`
	Suffix   []string `json:"suffix"`
	MaxDepth int      `json:"max_depth"`
	Limit    int      `json:"limit"`
	Offset   int      `json:"offset"`
}

// lgListNamespaces lists the namespaces that hold items, under prefix and
// ending with suffix, cut to max_depth labels.
func (s *Server) lgListNamespaces(w http.ResponseWriter, r *http.Request) {
	st := s.storeFor(w)
	if st == nil {
		return
	}
	var req lgNamespacesRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	prefix, e := nsPrefix(req.Prefix)
	if e != nil {
		writeError(w, e)
		return
	}
	metas, err := listAll(r, st, ownerFrom(r.Context()), prefix)
	if err != nil {
		writeError(w, s.storeError(r, err))
		return
	}
	seen := map[string]bool{}
	out := [][]string{}
	for _, m := range metas {
		segs := strings.Split(m.Path, "/")
		ns := segs[:len(segs)-1]
		if req.MaxDepth > 0 && len(ns) > req.MaxDepth {
			ns = ns[:req.MaxDepth]
		}
		if len(req.Suffix) > 0 && (len(ns) < len(req.Suffix) || !slices.Equal(ns[len(ns)-len(req.Suffix):], req.Suffix)) {
			continue
		}
		if k := strings.Join(ns, "/"); !seen[k] {
			seen[k] = true
			out = append(out, ns)
		}
	}
	if req.Limit == 0 {
		req.Limit = 100
	}
	page, e := pageOf(out, req.Limit, req.Offset)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": page})
}
