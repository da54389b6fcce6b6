package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coorflow/coorflow/store"
)

// How a chat maps onto a thread. OpenAI's API is stateless: a client sends
// the whole conversation each time. The thread of a request is, in order:
//
//  1. the thread its OpenAIThreadHeader names (created if it does not
//     exist), for clients that keep a thread id themselves;
//  2. the thread that answered the conversation so far: when a request's
//     messages before its last user message hold an answer of the
//     workflow, the server looks up the hash of those messages (the
//     owner, the model, each message's role and trimmed text), which it
//     stored when it answered them. A chat UI resending the history
//     continues the same thread, and two conversations that began alike
//     but went apart are two threads;
//  3. a new thread, for a conversation that has no answer yet or one the
//     server did not give (a history written elsewhere, or forgotten).
//
// The index of conversations lives in Config.Store, under the server's
// own owner, so that it survives a restart and replicas share it; without
// a Store, in memory (maxConvs of them, the oldest forgotten first).

// maxConvs bounds the conversations remembered in memory.
const maxConvs = 10000

// convPath is where the Store keeps the thread of a conversation hash, as
// an item of convOwner, the server's own owner (no token's).
const (
	convPath  = "openai/conversations/"
	convOwner = cronOwner
)

// convMessage is a message of a conversation, as its hash reads it.
type convMessage struct {
	Role, Text string
}

// convIndex maps conversation hashes to threads in memory.
type convIndex struct {
	mu    sync.Mutex
	m     map[string]string
	order []string
}

func (x *convIndex) get(key string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id, ok := x.m[key]
	return id, ok
}

func (x *convIndex) put(key, thread string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[string]string{}
	}
	if _, ok := x.m[key]; !ok {
		if len(x.order) >= maxConvs {
			delete(x.m, x.order[0])
			x.order = x.order[1:]
		}
		x.order = append(x.order, key)
	}
	x.m[key] = thread
}

// lookupConv returns the thread of the conversation hash key.
func (s *Server) lookupConv(ctx context.Context, key string) (string, bool, error) {
	if s.cfg.Store == nil {
		id, ok := s.openai.convs.get(key)
		return id, ok, nil
	}
	it, err := s.cfg.Store.Get(ctx, convOwner, convPath+key)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return it.Content, true, nil
}

// rememberConv stores that the conversation of c, answered with answer,
// is on thread: the next request of the conversation continues it. A
// failure is logged: the conversation's next turn starts a new thread.
func (s *Server) rememberConv(ctx context.Context, owner string, c *chat, answer, thread string) {
	msgs := append(append([]convMessage{}, c.prefix...), convMessage{"user", c.last}, convMessage{"assistant", answer})
	key := convHash(owner, c.req.Model, msgs)
	if s.cfg.Store == nil {
		s.openai.convs.put(key, thread)
		return
	}
	ctx = context.WithoutCancel(ctx)
	_, err := s.cfg.Store.Add(ctx, convOwner, convPath+key, thread, store.Attrs{})
	if errors.Is(err, store.ErrExists) {
		var it store.Item
		if it, err = s.cfg.Store.Get(ctx, convOwner, convPath+key); err == nil && it.Content != thread {
			_, err = s.cfg.Store.Edit(ctx, convOwner, convPath+key, store.Replace(it.Revision, thread))
		}
	}
	if err != nil {
		s.log.WarnContext(ctx, "server: openai: remember a conversation's thread", "request_id", requestID(ctx), "thread", thread, "err", err)
	}
}

// convThread is the thread the chat c of owner runs on (see above),
// created (created is set) when it is new.
func (s *Server) convThread(r *http.Request, owner string, c *chat) (th Thread, created bool, err error) {
	ctx := r.Context()
	if id := r.Header.Get(OpenAIThreadHeader); id != "" {
		if !threadIDPattern.MatchString(id) {
			return Thread{}, false, fieldErrorf(CodeInvalidField, OpenAIThreadHeader,
				"header %s: thread id %q must be 1 to 128 letters, digits, '.', '_', ':' or '-'", OpenAIThreadHeader, id)
		}
		return s.chatThread(ctx, owner, id, c.req.Model)
	}
	answered := false
	for _, m := range c.prefix {
		answered = answered || m.Role == "assistant"
	}
	if answered {
		id, ok, err := s.lookupConv(ctx, convHash(owner, c.req.Model, c.prefix))
		if err != nil {
			return Thread{}, false, err
		}
		if ok {
			return s.chatThread(ctx, owner, id, c.req.Model)
		}
	}
	return s.chatThread(ctx, owner, "oai-"+newID(), c.req.Model)
}

// chatThread loads the owner's thread id for a run of model, binding it
// to model when no run has yet, or creates it (created is set).
func (s *Server) chatThread(ctx context.Context, owner, id, model string) (th Thread, created bool, err error) {
	th, head, err := s.threadRecord(ctx, owner, id)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == CodeUnknownThread {
		if e := s.storageQuota(owner); e != nil {
			return Thread{}, false, e
		}
		th = Thread{ID: id, Workflow: model, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Metadata: map[string]any{"source": "openai"}}
		if err := s.storeThread(ctx, owner, th); err != nil {
			return th, false, err
		}
		return th, true, nil
	}
	if err != nil {
		return th, false, err
	}
	switch th.Workflow {
	case model:
	case "":
		th.Workflow = model
		if err := s.updateThread(ctx, owner, th, head); err != nil {
			return th, false, err
		}
	default:
		return th, false, errorf(http.StatusConflict, CodeWrongWorkflow, "thread %q runs model (workflow) %q, not %q: continue it with that model, or start another conversation", th.ID, th.Workflow, model)
	}
	return th, false, nil
}
