package server

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
// The index of conversations holds one entry per thread: the hash of the
// conversation the thread answered last. When a thread answers a turn,
// the entry of its previous conversation is replaced by the new one, and
// when a thread is deleted (DELETE of the thread on either API,
// threads/prune, the end of a stateless run) its entry goes with it. So
// the index holds at most one entry per live thread, and an owner's
// threads are bounded by its storage quota (MaxStoredBytes: each thread's
// record counts in it); the entries themselves, about 200 bytes a thread,
// are the server's and count in no owner's quota. A client that goes back
// in a conversation (resends an earlier history with a new message:
// regenerate, edit) finds no entry for it, as the thread has moved on,
// and starts a new thread, rather than continuing a thread whose state
// holds the turns the client took back.
//
// The index lives in Config.Store, under the server's own owner, so that
// it survives a restart and replicas share it: for each thread, an item
// at convThreadPath holds the hash of its conversation, and an item at
// convPath+hash holds the thread's id. They change by the Store's
// revisions (Add, Edit and Delete at the revision read), in an order
// that leaves no entry but those of the threads' hashes, whatever runs at
// the same time on any replica: a thread's hash is replaced first (which
// tells the previous one), then its conversation's entry written; the
// hash is read again, and the entry deleted if another answer of the
// thread replaced the hash meanwhile (that answer read this one's hash
// before the entry was there, so did not delete it); then the entry of
// the previous conversation is deleted; and last, a thread deleted
// meanwhile (whose deletion found nothing yet to delete) has what was
// written deleted again. An entry is deleted only while it names the
// thread: when two threads answered the same conversation, the entry
// names the last, and the other's changes leave it. Without a Store the index is in memory, for maxConvs threads,
// the oldest forgotten first.

// maxConvs bounds the threads whose conversations are remembered in
// memory, without a Store.
const maxConvs = 10000

// The Store's items of the index, all of convOwner, the server's own
// owner (no token's): convPath+hash holds the id of the thread that
// answered the conversation of hash last; convThreadPath+owner's
// digest+"/"+thread holds the hash of the conversation the thread
// answered last.
const (
	convPath       = "openai/conversations/"
	convThreadPath = "openai/threads/"
	convOwner      = cronOwner
)

// maxConvTries bounds the attempts at one change of an item of the
// index that other requests change at the same time.
const maxConvTries = 8

// convMessage is a message of a conversation, as its hash reads it.
type convMessage struct {
	Role, Text string
}

// convIndex maps conversation hashes to threads in memory, one per
// thread.
type convIndex struct {
	mu      sync.Mutex
	convs   map[string]*list.Element // by conversation hash
	threads map[string]*list.Element // by thread key (threadKey)
	order   list.List                // of *convEntry, oldest thread first
}

// convEntry is the conversation thread (of Saver key tkey) answered last.
type convEntry struct {
	tkey, thread, conv string
}

func (x *convIndex) get(conv string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	el, ok := x.convs[conv]
	if !ok {
		return "", false
	}
	return el.Value.(*convEntry).thread, true
}

// put makes conv the conversation of thread (of key tkey), in place of
// the one it had.
func (x *convIndex) put(tkey, thread, conv string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.convs == nil {
		x.convs, x.threads = map[string]*list.Element{}, map[string]*list.Element{}
	}
	el, ok := x.threads[tkey]
	if ok {
		x.unlink(el)
		el.Value.(*convEntry).conv = conv
	} else {
		if x.order.Len() >= maxConvs {
			x.remove(x.order.Front())
		}
		el = x.order.PushBack(&convEntry{tkey: tkey, thread: thread, conv: conv})
		x.threads[tkey] = el
	}
	x.convs[conv] = el
}

// drop forgets the conversation of the thread of key tkey.
func (x *convIndex) drop(tkey string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if el, ok := x.threads[tkey]; ok {
		x.remove(el)
	}
}

// len is how many conversations and threads the index holds.
func (x *convIndex) len() (convs, threads int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.convs), len(x.threads)
}

// remove forgets the entry el. x.mu is held.
func (x *convIndex) remove(el *list.Element) {
	x.unlink(el)
	delete(x.threads, el.Value.(*convEntry).tkey)
	x.order.Remove(el)
}

// unlink removes el's conversation from the index, unless another thread
// has answered the same conversation since. x.mu is held.
func (x *convIndex) unlink(el *list.Element) {
	if conv := el.Value.(*convEntry).conv; x.convs[conv] == el {
		delete(x.convs, conv)
	}
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
// is on thread, in place of the conversation the thread had: the next
// request of the conversation continues it. A failure is logged: the
// conversation's next turn starts a new thread.
func (s *Server) rememberConv(ctx context.Context, owner string, c *chat, answer, thread string) {
	msgs := append(append([]convMessage{}, c.prefix...), convMessage{"user", c.last}, convMessage{"assistant", answer})
	key := convHash(owner, c.req.Model, msgs)
	ctx = context.WithoutCancel(ctx)
	err := s.storeConv(ctx, owner, thread, key)
	if err == nil {
		// A thread deleted meanwhile forgot its conversation before it
		// was written: forget it again.
		_, _, err = s.threadRecord(ctx, owner, thread)
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Code == CodeUnknownThread {
			err = s.forgetConv(ctx, owner, thread)
		}
	}
	if err != nil {
		s.log.WarnContext(ctx, "server: openai: remember a conversation's thread", "request_id", requestID(ctx), "thread", thread, "err", err)
	}
}

// storeConv makes key the conversation of the owner's thread, in place
// of the one it had (see above).
func (s *Server) storeConv(ctx context.Context, owner, thread, key string) error {
	if s.cfg.Store == nil {
		s.openai.convs.put(threadKey(owner, thread), thread, key)
		return nil
	}
	old, err := s.setConvItem(ctx, convThreadItem(owner, thread), key)
	if err != nil {
		return err
	}
	if _, err := s.setConvItem(ctx, convPath+key, thread); err != nil {
		return err
	}
	// Another answer of the thread remembered meanwhile, having read key
	// as the thread's before it was the entry's (so not deleting it): key
	// is no more the thread's conversation.
	it, err := s.cfg.Store.Get(ctx, convOwner, convThreadItem(owner, thread))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("server: openai: read the conversation of thread %q: %w", thread, err)
	}
	if it.Content != key {
		if err := s.dropConvItem(ctx, convPath+key, thread); err != nil {
			return err
		}
	}
	if old != "" && old != key {
		return s.dropConvItem(ctx, convPath+old, thread)
	}
	return nil
}

// forgetConv forgets the conversation of the owner's thread, which is
// being deleted.
func (s *Server) forgetConv(ctx context.Context, owner, thread string) error {
	if s.cfg.Store == nil {
		s.openai.convs.drop(threadKey(owner, thread))
		return nil
	}
	path := convThreadItem(owner, thread)
	it, err := s.cfg.Store.Get(ctx, convOwner, path)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("server: forget the conversation of thread %q: %w", thread, err)
	}
	if err := s.dropConvItem(ctx, convPath+it.Content, thread); err != nil {
		return err
	}
	return s.dropConvItem(ctx, path, it.Content)
}

// convThreadItem is the path of the item that holds the conversation of
// the owner's thread.
func convThreadItem(owner, thread string) string {
	sum := sha256.Sum256([]byte(owner))
	return convThreadPath + hex.EncodeToString(sum[:16]) + "/" + thread
}

// setConvItem makes content the content of convOwner's item at path,
// added or replaced at the revision read, and returns the content it had
// ("" when there was none).
func (s *Server) setConvItem(ctx context.Context, path, content string) (string, error) {
	st := s.cfg.Store
	for range maxConvTries {
		it, err := st.Get(ctx, convOwner, path)
		switch {
		case errors.Is(err, store.ErrNotFound):
			_, err = st.Add(ctx, convOwner, path, content, store.Attrs{})
			if err == nil {
				return "", nil
			}
			if !errors.Is(err, store.ErrExists) {
				return "", fmt.Errorf("server: openai: add %q: %w", path, err)
			}
			continue // added by another request meanwhile
		case err != nil:
			return "", fmt.Errorf("server: openai: read %q: %w", path, err)
		case it.Content == content:
			return content, nil
		}
		_, err = st.Edit(ctx, convOwner, path, store.Replace(it.Revision, content))
		if err == nil {
			return it.Content, nil
		}
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("server: openai: edit %q: %w", path, err)
		}
	}
	return "", fmt.Errorf("server: openai: %q was changed by other requests %d times while being set", path, maxConvTries)
}

// dropConvItem deletes convOwner's item at path if it holds content, at
// the revision read.
func (s *Server) dropConvItem(ctx context.Context, path, content string) error {
	st := s.cfg.Store
	for range maxConvTries {
		it, err := st.Get(ctx, convOwner, path)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("server: openai: read %q: %w", path, err)
		case it.Content != content:
			return nil // another thread's, or the thread's next
		}
		err = st.Delete(ctx, convOwner, path, it.Revision)
		if err == nil || errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("server: openai: delete %q: %w", path, err)
		}
	}
	return fmt.Errorf("server: openai: %q was changed by other requests %d times while being deleted", path, maxConvTries)
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
