package store

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Ranking of search hits: BM25 over the candidates the backend's index
// found, computed here so that every backend (memory, SQLite, PostgreSQL)
// returns the same hits in the same order. FTS5's bm25() over the trigram
// index would score trigrams, not words, and PostgreSQL's ts_rank is not
// BM25; one ranking keeps the conformance suite one suite.
const (
	// bm25K1 and bm25B are BM25's usual term-frequency saturation and
	// length normalization.
	bm25K1 = 1.2
	bm25B  = 0.75
	// minShortTerm is the length under which a query word is dropped
	// when the query has longer ones: "a", "it" and "of" would otherwise
	// make nearly every item match.
	minShortTerm = 3
	// minMatchShare of a query's terms (rounded up) must occur in a hit.
	minMatchShare = 0.3
	// recencyWeight and recencyHalfLife: a hit updated now scores up to
	// recencyWeight more than an old one, the bonus halving every
	// recencyHalfLife. It orders near-equal hits, never overturns a
	// clearly better match.
	recencyWeight   = 0.1
	recencyHalfLife = 30 * 24 * time.Hour
)

// stopWords are English words too common to tell items apart.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further had
		has have having he her here hers herself him himself his how i if in into is it its itself just me more most
		my myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
		such than that the their theirs them themselves then there these they this those through to too under until
		up very was we were what when where which while who whom why will with would you your yours yourself
		yourselves also get got let may might must shall us one ever again`) {
		m[w] = true
	}
	return m
}()

// queryTerms splits a query into distinct lower-case terms at white
// space, without surrounding punctuation, stop words or words under three
// letters — unless nothing else is left, so that a query of only such
// words ("go") still searches.
func queryTerms(query string) []string {
	var all, kept []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(query), unicode.IsSpace) {
		f = strings.Trim(f, `"'“”‘’()[]{}<>.,;:!?`)
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		all = append(all, f)
		if !stopWords[f] && utf8.RuneCountInString(f) >= minShortTerm {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return all
	}
	return kept
}

// minMatch is how many of n query terms a hit must contain.
func minMatch(n int) int {
	return max(1, int(math.Ceil(minMatchShare*float64(n)-1e-9)))
}

// rank scores items against terms with BM25 (term frequencies in the path
// and content, document frequencies among the items, lengths in bytes),
// drops those with fewer than minMatch distinct terms, adds a small bonus
// for recent items, and sorts: best first, then by path.
func rank(items []Item, terms []string, now time.Time) []Hit {
	if len(items) == 0 {
		return nil
	}
	type doc struct {
		lower string
		tf    []int
	}
	docs := make([]doc, len(items))
	df := make([]int, len(terms))
	total := 0
	for i, it := range items {
		lower := strings.ToLower(it.Path) + "\n" + strings.ToLower(it.Content)
		tf := make([]int, len(terms))
		for j, t := range terms {
			tf[j] = strings.Count(lower, t)
			if tf[j] > 0 {
				df[j]++
			}
		}
		docs[i] = doc{lower: lower, tf: tf}
		total += len(lower)
	}
	n := float64(len(items))
	avg := float64(total) / n
	need := minMatch(len(terms))
	var hits []Hit
	for i, it := range items {
		d := docs[i]
		matched, count, score := 0, 0, 0.0
		norm := bm25K1 * (1 - bm25B + bm25B*float64(len(d.lower))/avg)
		for j := range terms {
			tf := float64(d.tf[j])
			if tf == 0 {
				continue
			}
			matched++
			count += d.tf[j]
			idf := math.Log(1 + (n-float64(df[j])+0.5)/(float64(df[j])+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
		if matched < need {
			continue
		}
		if age := now.Sub(it.Updated); age >= 0 {
			score *= 1 + recencyWeight*math.Exp2(-float64(age)/float64(recencyHalfLife))
		}
		hits = append(hits, Hit{Meta: it.Meta, Matches: count, Score: score, Snippet: snippet(it.Content, strings.ToLower(it.Content), terms)})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.Path, b.Path))
	})
	return hits
}
