package longrun_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"

	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// The run: researchTurns tool calls, the last of which fetches the
// reviewer's questions.
const (
	researchTurns = 100
	bigEvery      = 15 // every 15th turn fetches an archive
	questionsURL  = "https://review.example/questions"
)

// fact is an answer the agent meets early and is asked about at the end.
type fact struct {
	site int
	turn int // the turn whose result holds it
	code string
}

// facts are in the results of turns 2, 4, ... 12 (site pages) and 15 (an
// archive, offloaded, its fact in the middle).
var facts = func() []fact {
	var fs []fact
	for s := 1; s <= 6; s++ {
		fs = append(fs, fact{site: s, turn: 2 * s, code: code(s)})
	}
	return append(fs, fact{site: 7, turn: bigEvery, code: code(7)})
}()

func code(site int) string {
	return fmt.Sprintf("%c%c-%04d", 'A'+site, 'Q'+site, 1000+site*917%9000)
}

var factRE = regexp.MustCompile(`access code of site (\d+) is ([A-Z]{2}-\d{4})`)

// callID is the id of the tool call of a research turn.
func callID(turn int) string { return fmt.Sprintf("call_%03d", turn) }

// request returns the tool and arguments of research turn t.
func request(t int) (tool, args string) {
	switch {
	case t == researchTurns:
		return "fetch", fmt.Sprintf(`{"url":%q}`, questionsURL)
	case t%bigEvery == 0:
		site := 0
		if t == bigEvery {
			site = 7
		}
		return "fetch", fmt.Sprintf(`{"url":"https://archive.example/site-%d/turn-%d"}`, site, t)
	case t%2 == 0 && t <= 12:
		return "fetch", fmt.Sprintf(`{"url":"https://site-%d.example/report"}`, t/2)
	case t%2 == 0:
		return "fetch", fmt.Sprintf(`{"url":"https://docs.example/page-%d"}`, t)
	}
	return "search", fmt.Sprintf(`{"query":"storage engines under load, angle %d"}`, t)
}

// tokensFor returns the size of the result for key: 2,000 to 10,000
// tokens, or 40,000 to 60,000 for an archive.
func tokensFor(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	n := int(h.Sum32())
	if strings.Contains(key, "archive.example") {
		return 40_000 + n%20_001
	}
	return 2_000 + n%8_001
}

// document returns a result of about tokensFor(key) tokens, lines of 100
// characters, with the fact of site (if any) at 40% of its lines, away
// from the first and last lines an offload preview shows.
func document(key string, site int) string {
	n := tokensFor(key) / 25 // 100 characters, 25 tokens a line
	factAt := n * 2 / 5
	var b strings.Builder
	for i := range n {
		if i == factAt && site > 0 {
			line := fmt.Sprintf("Note: the access code of site %d is %s, valid until the audit.", site, code(site))
			b.WriteString(line + strings.Repeat(" ", max(99-len(line), 0)) + "\n")
			continue
		}
		line := fmt.Sprintf("%s §%d: p99 latency %d ms, %d req/s, $%d per month, %d%% disk", key, i, 3+i*7%90, 1000+i*37%9000, 50+i*13%900, i*11%100)
		if len(line) < 99 {
			line += strings.Repeat(".", 99-len(line))
		}
		b.WriteString(line[:99] + "\n")
	}
	return b.String()
}

// questions is the reviewer's page fetched at the last turn.
func questions() string {
	var b strings.Builder
	b.WriteString("Reviewer's questions. Answer each from your research:\n")
	for i, f := range facts {
		fmt.Fprintf(&b, "Q%d: What is the access code of site %d?\n", i+1, f.site)
	}
	return b.String()
}

var siteRE = regexp.MustCompile(`site-(\d+)`)

// toolbox returns the search and fetch tools over the generated corpus,
// and read_context over the offloaded items of bs.
func toolbox(bs *window.BoardStore) (*tools.Registry, error) {
	search := tools.Typed("search", "Searches the web; returns the result pages' text.", nil,
		func(_ context.Context, a struct {
			Query string `json:"query" jsonschema:"required"`
		}) (string, error) {
			return document("search:"+a.Query, 0), nil
		})
	fetch := tools.Typed("fetch", "Fetches a web page and returns its text.", nil,
		func(_ context.Context, a struct {
			URL string `json:"url" jsonschema:"required"`
		}) (string, error) {
			if a.URL == questionsURL {
				return questions(), nil
			}
			site := 0
			if m := siteRE.FindStringSubmatch(a.URL); m != nil {
				site, _ = strconv.Atoi(m[1])
			}
			return document(a.URL, site), nil
		})
	return tools.NewRegistry(search, fetch, window.ReadContextTool(bs))
}
