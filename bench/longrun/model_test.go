package longrun_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/window"
)

// maxReads bounds the read_context calls spent on one question.
const maxReads = 30

// question is a reviewer's question as the model tracks it.
type question struct {
	site   int
	call   string // the research call whose result held the answer
	answer string
	how    string // "prompt" or "read_context"
	reads  int
	gaveUp bool
	// leads are the reads to make next, most promising last.
	leads []window.ReadArgs
	tried map[string]bool
}

// researcher is the scripted model side: it makes the research calls in
// order, fetches the questions last, then answers each from what it is
// sent — the prompt, or pages it reads back with read_context, following
// the references it finds there. It never answers from its own knowledge
// of the corpus. It is safe for one agent at a time.
type researcher struct {
	mu        sync.Mutex
	turn      int
	questions []*question
	reading   *question // the question the last read_context call was for
	reads     int
	// tools is the tool list of the last request as sent; toolChanges
	// counts the requests whose list differed from the one before, which
	// would break a provider's prompt cache from its very beginning.
	tools       string
	toolChanges int
}

var (
	questionRE = regexp.MustCompile(`Q\d+: What is the access code of site (\d+)\?`)
	archiveRE  = regexp.MustCompile(`archived at (\S+?);`)
)

func (r *researcher) respond(req openaitest.ChatRequest) openaitest.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tools, _ := json.Marshal(req.Tools); r.tools != "" && string(tools) != r.tools {
		r.toolChanges++
	} else {
		r.tools = string(tools)
	}
	if r.turn < researchTurns {
		r.turn++
		tool, args := request(r.turn)
		return openaitest.ToolCalls(openaitest.ToolCall{ID: callID(r.turn), Name: tool, Arguments: args})
	}
	last := req.Messages[len(req.Messages)-1]
	if r.questions == nil {
		r.parseQuestions(last.Text())
		if len(r.questions) == 0 {
			return openaitest.Text("I found no questions to answer.")
		}
	}
	r.lookUp(req)
	if r.reading != nil && last.Role == "tool" && strings.HasPrefix(last.ToolCallID, "read_") {
		r.follow(r.reading, last.Text())
	}
	for _, q := range r.questions {
		if q.answer != "" || q.gaveUp {
			continue
		}
		if len(q.leads) == 0 && q.reads == 0 {
			q.leads = leadsInPrompt(req, q)
		}
		next, ok := q.next()
		if !ok || q.reads >= maxReads {
			q.gaveUp = true
			continue
		}
		q.reads++
		r.reads++
		r.reading = q
		args, _ := json.Marshal(next)
		return openaitest.ToolCalls(openaitest.ToolCall{ID: fmt.Sprintf("read_%03d", r.reads), Name: window.ReadContextName, Arguments: string(args)})
	}
	return openaitest.Text(r.answers())
}

func (r *researcher) parseQuestions(text string) {
	for _, m := range questionRE.FindAllStringSubmatch(text, -1) {
		site, _ := strconv.Atoi(m[1])
		q := &question{site: site, tried: map[string]bool{}}
		for _, f := range facts {
			if f.site == site {
				q.call = callID(f.turn) // the model knows which of its calls fetched the site
			}
		}
		r.questions = append(r.questions, q)
	}
}

// lookUp answers every open question whose fact is in the prompt.
func (r *researcher) lookUp(req openaitest.ChatRequest) {
	found := map[int]string{}
	for _, m := range req.Messages {
		text := m.Text()
		if m.Role == "tool" && strings.HasPrefix(m.ToolCallID, "read_") {
			var page window.ReadPage
			if json.Unmarshal([]byte(text), &page) == nil {
				text = page.Content
			}
		}
		for _, f := range factRE.FindAllStringSubmatch(text, -1) {
			site, _ := strconv.Atoi(f[1])
			found[site] = f[2]
		}
	}
	for _, q := range r.questions {
		if a, ok := found[q.site]; ok && q.answer == "" {
			q.answer, q.how = a, "prompt"
			if q.reads > 0 {
				q.how = "read_context"
			}
		}
	}
}

// follow reads the page of the last read_context call for q: references
// to the call's result go first, then the rest of the page's text.
func (r *researcher) follow(q *question, result string) {
	var page window.ReadPage
	if json.Unmarshal([]byte(result), &page) != nil {
		return
	}
	if !page.EOF {
		q.push(window.ReadArgs{Ref: page.Ref, Offset: page.NextOffset, Limit: window.MaxReadBytes})
	}
	for _, m := range archiveRE.FindAllStringSubmatch(page.Content, -1) {
		q.push(window.ReadArgs{Ref: m[1], Limit: window.MaxReadBytes})
	}
	if ref := refOfCall(page.Content, q.call); ref != "" {
		q.push(window.ReadArgs{Ref: ref, Limit: window.MaxReadBytes})
	}
}

// leadsInPrompt returns where q's answer may be: the reference in place
// of its call's result, or the archived transcripts.
func leadsInPrompt(req openaitest.ChatRequest, q *question) []window.ReadArgs {
	var leads []window.ReadArgs
	for _, m := range req.Messages {
		for _, a := range archiveRE.FindAllStringSubmatch(m.Text(), -1) {
			leads = append(leads, window.ReadArgs{Ref: a[1], Limit: window.MaxReadBytes})
		}
	}
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == q.call {
			if ref := fullText(m.Text()); ref != "" {
				leads = append(leads, window.ReadArgs{Ref: ref, Limit: window.MaxReadBytes})
			}
		}
	}
	return leads
}

func (q *question) push(a window.ReadArgs) {
	key := fmt.Sprintf("%s@%d", a.Ref, a.Offset)
	if q.tried[key] {
		return
	}
	q.leads = append(q.leads, a)
}

func (q *question) next() (window.ReadArgs, bool) {
	for len(q.leads) > 0 {
		a := q.leads[len(q.leads)-1]
		q.leads = q.leads[:len(q.leads)-1]
		key := fmt.Sprintf("%s@%d", a.Ref, a.Offset)
		if !q.tried[key] {
			q.tried[key] = true
			return a, true
		}
	}
	return window.ReadArgs{}, false
}

var fullTextRE = regexp.MustCompile(`Full text: (\S+)`)

// fullText returns the reference in a stub or an offload notice.
func fullText(s string) string {
	if m := fullTextRE.FindStringSubmatch(s); m != nil {
		return strings.TrimRight(m[1], ".,;]")
	}
	return ""
}

// refOfCall returns the reference that stands for call's result in an
// archived transcript: its stub or its offload notice.
func refOfCall(transcript, call string) string {
	i := strings.Index(transcript, "("+call+")]\n")
	if i < 0 {
		return ""
	}
	block := transcript[i:]
	if j := strings.Index(block, "\n["); j >= 0 && !strings.HasPrefix(block[j+1:], "[Result of tool") && !strings.HasPrefix(block[j+1:], "[Tool result") {
		block = block[:j]
	}
	if len(block) > 2_000 {
		block = block[:2_000]
	}
	return fullText(block)
}

// answers is the final answer.
func (r *researcher) answers() string {
	var b strings.Builder
	for i, q := range r.questions {
		a := q.answer
		if a == "" {
			a = "not found"
		}
		fmt.Fprintf(&b, "A%d: the access code of site %d is %s.\n", i+1, q.site, a)
	}
	return b.String()
}
