package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/nodes/plan"
)

// Turn is one turn of a conversation: a message of the user and what the
// workflow made of it. A thread is a conversation; each input on it begins
// a turn when the coordinator receives it, and the turn ends with the
// answer (the reporter's, or the coordinator's own).
type Turn struct {
	// N numbers the thread's turns from 1.
	N int `json:"n"`
	// Input is the user's message; Run the run that began the turn
	// (graph.RuntimeRun), when the caller named it.
	Input string `json:"input"`
	Run   string `json:"run,omitempty"`
	// Request is the task handed to the planner ("" when the coordinator
	// answered itself); Plan the title of the turn's last plan; Rounds
	// the planner rounds it took.
	Request string `json:"request,omitempty"`
	Plan    string `json:"plan,omitempty"`
	Rounds  int    `json:"rounds,omitempty"`
	// Answer is the answer on one line of at most 240 characters; the
	// whole answer is in Messages.
	Answer string `json:"answer,omitempty"`
	// Note says what limited the turn, such as the planner's round limit.
	Note string `json:"note,omitempty"`
}

// Limits on what earlier turns put in a prompt: the planner and the
// reporter see the last shownTurns turns as summaries (one line per
// finding, with its reference) and the ones before as one line each, at
// most listedTurns of them; the coordinator sees the last shownMessages
// messages of the conversation, each cut to messageRunes.
const (
	shownTurns    = 5
	listedTurns   = 20
	shownMessages = 10
	messageRunes  = 1500
)

// beginTurn begins a turn on input: it returns the turn (numbered after
// the last, for the caller to write to CurrentTurn) and the writes that set
// the channels of one turn — plan, planner rounds, feedback, background,
// current step, request, answer — back to empty, for those the graph has.
// The conversation (Messages, Turns) and the findings of earlier turns
// stay. skip names channels the caller writes itself.
func beginTurn(ctx context.Context, s graph.State, input string, skip ...graph.Channel) (Turn, []graph.Write) {
	t := Turn{N: CurrentTurn.Get(s).N + 1, Input: input, Run: graph.RuntimeString(ctx, graph.RuntimeRun)}
	has := map[string]bool{}
	for _, name := range s.Channels() {
		has[name] = true
	}
	for _, c := range skip {
		delete(has, c.Name())
	}
	var ws []graph.Write
	if has[PlanKey.Name()] && PlanKey.Get(s) != nil {
		ws = append(ws, PlanKey.Set(nil))
	}
	if n := Iterations.Get(s); has[Iterations.Name()] && n != 0 {
		ws = append(ws, Iterations.Set(-n)) // a sum channel: back to 0
	}
	for _, k := range []*graph.Key[string]{Feedback, Background, CurrentStep, Request, Answer} {
		if v, _ := s.Value(k.Name()); has[k.Name()] && v != nil && v != "" {
			ws = append(ws, k.Set(""))
		}
	}
	return t, ws
}

// AddFindings returns the write that adds found to Findings, each marked
// with the current turn. The nodes that run steps (a worker, the team)
// record their results through it.
func AddFindings(s graph.State, found []plan.Finding) graph.Write {
	n := CurrentTurn.Get(s).N
	out := make([]plan.Finding, len(found))
	for i, f := range found {
		f.Turn = n
		out[i] = f
	}
	return Findings.Set(out)
}

// turnFindings returns the findings of the current turn.
func turnFindings(s graph.State) []plan.Finding {
	n := CurrentTurn.Get(s).N
	var out []plan.Finding
	for _, f := range Findings.Get(s) {
		if f.Turn == n {
			out = append(out, f)
		}
	}
	return out
}

// endTurn returns the writes that end the current turn with answer: the
// turn, completed, in CurrentTurn and appended to Turns.
func endTurn(s graph.State, answer string) []graph.Write {
	t := CurrentTurn.Get(s)
	if t.N == 0 {
		// The coordinator did not run (a file without one): the turn is
		// the input it answers.
		t = Turn{N: 1, Input: Input.Get(s)}
		if done := Turns.Get(s); len(done) > 0 {
			t.N = done[len(done)-1].N + 1
		}
	}
	t.Request = Request.Get(s)
	if p := PlanKey.Get(s); p != nil {
		t.Plan = p.Title
	}
	t.Answer = answerLine(answer)
	return []graph.Write{CurrentTurn.Set(t), graph.AppendTo(Turns, t)}
}

// earlierTurns renders the finished turns before the current one for a
// planner or a reporter: for each of the last shownTurns, the user's
// message, the task, the plan, one line per finding with the reference of
// its full result, and the answer in one line — summaries and references,
// never transcripts. Older turns get one line each. "" when there are
// none.
func earlierTurns(s graph.State) string {
	cur := CurrentTurn.Get(s).N
	var done []Turn
	for _, t := range Turns.Get(s) {
		if t.N != cur {
			done = append(done, t)
		}
	}
	if len(done) == 0 {
		return ""
	}
	byTurn := map[int][]plan.Finding{}
	for _, f := range Findings.Get(s) {
		byTurn[f.Turn] = append(byTurn[f.Turn], f)
	}
	var b strings.Builder
	cut := max(0, len(done)-shownTurns)
	if older := done[:cut]; len(older) > 0 {
		if len(older) > listedTurns {
			fmt.Fprintf(&b, "(%d earlier turns not shown)\n", len(older)-listedTurns)
			older = older[len(older)-listedTurns:]
		}
		for _, t := range older {
			fmt.Fprintf(&b, "- Turn %d: %s → %s\n", t.N, oneLine(t.Input), oneLine(t.Answer))
		}
		b.WriteString("\n")
	}
	for _, t := range done[cut:] {
		fmt.Fprintf(&b, "## Turn %d\nUser: %s\n", t.N, oneLine(t.Input))
		if t.Request != "" {
			fmt.Fprintf(&b, "Task: %s\n", oneLine(t.Request))
		}
		if t.Plan != "" {
			fmt.Fprintf(&b, "Plan: %s\n", oneLine(t.Plan))
		}
		if fs := byTurn[t.N]; len(fs) > 0 {
			b.WriteString("Results (one line each; a step's agent reads a full result with read_context and its ref):\n")
			b.WriteString(plan.ResultsView(fs))
		}
		fmt.Fprintf(&b, "Answer: %s\n\n", oneLine(t.Answer))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// conversation returns the last shownMessages messages of the
// conversation before the current input, each cut to messageRunes.
func conversation(s graph.State) []ChatMessage {
	msgs := Messages.Get(s)
	msgs = msgs[max(0, len(msgs)-shownMessages):]
	out := slices.Clone(msgs)
	for i, m := range out {
		if r := []rune(m.Content); len(r) > messageRunes {
			out[i].Content = string(r[:messageRunes]) + " […]"
		}
	}
	return out
}

// answerLine is an answer on one line, without markdown heading marks.
func answerLine(answer string) string {
	lines := strings.Split(answer, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "# ")
	}
	return oneLine(strings.Join(lines, " "))
}
