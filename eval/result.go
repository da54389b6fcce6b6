package eval

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/llm"
)

// The states of an eval run (Result.Status).
const (
	RunRunning = "running" // under way, or killed: a Run with its ID resumes it
	RunDone    = "done"
)

var runID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Result is an eval run: its trials, per case and in total.
type Result struct {
	ID       string `json:"id"`
	Label    string `json:"label,omitempty"`
	Workflow string `json:"workflow"`
	Dataset  string `json:"dataset"`
	Status   string `json:"status"`
	// ReplayOf is the eval run whose recordings answered the model calls.
	ReplayOf    string     `json:"replay_of,omitempty"`
	Started     time.Time  `json:"started"`
	Finished    time.Time  `json:"finished,omitzero"`
	Resumed     int        `json:"resumed,omitempty"`
	Repeats     int        `json:"repeats"`
	Concurrency int        `json:"concurrency"`
	CaseBudget  llm.Budget `json:"case_budget,omitzero"`
	TotalBudget llm.Budget `json:"total_budget,omitzero"`
	// Total sums up every trial; Cases each case's, in dataset order.
	Total  Summary      `json:"total"`
	Cases  []CaseResult `json:"cases"`
	Trials []*Trial     `json:"-"`
}

// CaseResult is one case's trials and their summary.
type CaseResult struct {
	Case string   `json:"case"`
	Tags []string `json:"tags,omitempty"`
	Summary
	Trials []*Trial `json:"trials"`
}

// Summary sums up trials.
type Summary struct {
	Trials int `json:"trial_count"`
	Passed int `json:"passed"`
	// PassRate is the share of trials that passed, with its 95% Wilson
	// interval.
	PassRate float64    `json:"pass_rate"`
	PassCI   [2]float64 `json:"pass_ci"`
	// MeanScore is the mean score, with its 95% confidence interval
	// (Student's t over the trials).
	MeanScore float64        `json:"mean_score"`
	ScoreCI   [2]float64     `json:"score_ci"`
	Statuses  map[Status]int `json:"statuses"`
	// Spend is what the workflows' model calls spent; JudgeSpend the
	// judges'.
	Spend      llm.Spend `json:"spend"`
	JudgeSpend llm.Spend `json:"judge_spend,omitzero"`
	// LatencyP50MS and LatencyP95MS are percentiles of the trials' wall
	// time.
	LatencyP50MS int64 `json:"latency_p50_ms"`
	LatencyP95MS int64 `json:"latency_p95_ms"`
	// Agents and Steps are the agents built and steps run, in all.
	Agents int `json:"agents"`
	Steps  int `json:"steps"`
}

// CostUSD is what the trials cost, judges included.
func (s Summary) CostUSD() float64 { return s.Spend.CostUSD + s.JudgeSpend.CostUSD }

// summarize fills Cases and Total from Trials.
func (r *Result) summarize(ds *Dataset) {
	by := map[string][]*Trial{}
	for _, t := range r.Trials {
		by[t.Case] = append(by[t.Case], t)
	}
	r.Cases = r.Cases[:0]
	order := map[string]int{}
	add := func(id string, tags []string) {
		ts := by[id]
		slices.SortFunc(ts, func(a, b *Trial) int { return a.Repeat - b.Repeat })
		order[id] = len(r.Cases)
		r.Cases = append(r.Cases, CaseResult{Case: id, Tags: tags, Summary: summarize(ts), Trials: ts})
	}
	if ds != nil {
		for _, c := range ds.Cases {
			add(c.ID, c.Tags)
		}
	}
	var rest []string
	for id := range by {
		if _, ok := order[id]; !ok {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	for _, id := range rest {
		add(id, nil)
	}
	all := make([]*Trial, 0, len(r.Trials))
	for _, c := range r.Cases {
		all = append(all, c.Trials...)
	}
	r.Trials = all
	r.Total = summarize(all)
}

func summarize(ts []*Trial) Summary {
	s := Summary{Trials: len(ts), Statuses: map[Status]int{}}
	if len(ts) == 0 {
		return s
	}
	scores := make([]float64, len(ts))
	lat := make([]int64, len(ts))
	for i, t := range ts {
		if t.Pass {
			s.Passed++
		}
		s.Statuses[t.Status]++
		scores[i] = t.Score
		lat[i] = t.LatencyMS
		s.Spend.Merge(t.Spend)
		s.JudgeSpend.Merge(t.JudgeSpend)
		s.Agents += t.Agents
		s.Steps += t.Steps
	}
	s.PassRate = float64(s.Passed) / float64(len(ts))
	s.PassCI = wilson(s.Passed, len(ts))
	s.MeanScore, s.ScoreCI = meanCI(scores)
	slices.Sort(lat)
	s.LatencyP50MS, s.LatencyP95MS = percentile(lat, 50), percentile(lat, 95)
	return s
}

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n int) [2]float64 {
	if n == 0 {
		return [2]float64{0, 1}
	}
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return [2]float64{math.Max(0, mid-half), math.Min(1, mid+half)}
}

// meanCI is the mean of xs and its 95% confidence interval (Student's t),
// clamped to [0, 1]; one value gives the interval [x, x].
func meanCI(xs []float64) (float64, [2]float64) {
	n := float64(len(xs))
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	if len(xs) < 2 {
		return mean, [2]float64{mean, mean}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	half := tCritical(len(xs)-1) * math.Sqrt(ss/(n-1)) / math.Sqrt(n)
	return mean, [2]float64{math.Max(0, mean-half), math.Min(1, mean+half)}
}

// tCritical is the two-sided 95% critical value of Student's t with df
// degrees of freedom.
func tCritical(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	switch {
	case df <= 0:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	case df <= 30:
		return 2.042
	case df <= 60:
		return 2.000
	case df <= 120:
		return 1.980
	}
	return 1.960
}

// percentile is the nearest-rank percentile p of sorted xs.
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(p)/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Table renders the result as a text table: one row per case, then the
// total.
func (r *Result) Table() string {
	var b strings.Builder
	label := r.ID
	if r.Label != "" {
		label += " (" + r.Label + ")"
	}
	fmt.Fprintf(&b, "eval %s: %s on %s, %d repeat(s)\n", label, r.Workflow, r.Dataset, r.Repeats)
	rows := [][]string{{"case", "pass", "score", "tokens", "cost", "p50", "p95", "agents", "steps", "status"}}
	for _, c := range r.Cases {
		rows = append(rows, summaryRow(c.Case, c.Summary))
	}
	rows = append(rows, summaryRow("TOTAL", r.Total))
	writeTable(&b, rows)
	if r.Total.JudgeSpend.Calls > 0 {
		fmt.Fprintf(&b, "judges: %d calls, %d tokens, %s\n", r.Total.JudgeSpend.Calls, r.Total.JudgeSpend.Tokens(), llm.USD(r.Total.JudgeSpend.CostUSD))
	}
	for _, c := range r.Cases {
		for _, t := range c.Trials {
			if t.Status != StatusPassed {
				fmt.Fprintf(&b, "%s #%d %s: %s\n", t.Case, t.Repeat+1, t.Status, t.why())
			}
		}
	}
	return b.String()
}

// why says why a trial did not pass.
func (t *Trial) why() string {
	if t.Error != "" {
		return t.Error
	}
	var out []string
	for _, g := range t.Grades {
		if !g.Pass {
			out = append(out, g.Grader+": "+g.Reason)
		}
	}
	return strings.Join(out, "; ")
}

func summaryRow(name string, s Summary) []string {
	return []string{name,
		fmt.Sprintf("%d/%d %.0f%% [%.0f-%.0f]", s.Passed, s.Trials, 100*s.PassRate, 100*s.PassCI[0], 100*s.PassCI[1]),
		fmt.Sprintf("%.2f [%.2f-%.2f]", s.MeanScore, s.ScoreCI[0], s.ScoreCI[1]),
		fmt.Sprint(s.Spend.Tokens()), llm.USD(s.CostUSD()),
		ms(s.LatencyP50MS), ms(s.LatencyP95MS), fmt.Sprint(s.Agents), fmt.Sprint(s.Steps), statuses(s.Statuses)}
}

func ms(v int64) string {
	if v < 1000 {
		return fmt.Sprintf("%dms", v)
	}
	return fmt.Sprintf("%.1fs", float64(v)/1000)
}

func statuses(m map[Status]int) string {
	var out []string
	for _, s := range []Status{StatusPassed, StatusFailed, StatusError, StatusTimeout, StatusOverBudget, StatusWaiting} {
		if m[s] > 0 {
			out = append(out, fmt.Sprintf("%s %d", s, m[s]))
		}
	}
	return strings.Join(out, ", ")
}

// writeTable writes rows in aligned columns.
func writeTable(b *strings.Builder, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				continue
			}
			b.WriteString(c + strings.Repeat(" ", width[i]-len([]rune(c))+2))
		}
		b.WriteString("\n")
	}
}
