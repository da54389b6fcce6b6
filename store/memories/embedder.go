package memories

import (
	"context"
	"hash/fnv"
	"strings"
	"unicode"
)

// HashEmbedder is a deterministic embedder with no model behind it: a
// bag of words hashed into Dims buckets. Texts that share words are near;
// it knows nothing of meaning. It serves tests and offline demos.
type HashEmbedder struct {
	Dims int // 256 when 0
}

// EmbedDocuments embeds each text.
func (h HashEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i], _ = h.EmbedQuery(ctx, t)
	}
	return out, nil
}

// EmbedQuery embeds one text.
func (h HashEmbedder) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	dims := h.Dims
	if dims <= 0 {
		dims = 256
	}
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		f := fnv.New32a()
		_, _ = f.Write([]byte(w))
		v[f.Sum32()%uint32(dims)]++
	}
	return v, nil
}
