package server

import (
	"context"
	"time"
)

// A run's notice is what its end tells outside the server: the POST of
// the run to its Platform request's webhook, and, for the run of an A2A
// task, the task's end recorded in its record and the task POSTed to its
// push notification URLs. The notice is the run's, not the replica's
// that took the request: among replicas, the one that finishes the run
// (Replicas.Finish: the replica holding its lease at its end, one that
// took it over included) delivers it from what the run and the task
// records hold, after claiming it (Replicas.ClaimNotice), so that one
// replica delivers it. A replica that dies before it recorded the
// notice sent (NoticeSent) — mid-POST included — leaves it to another,
// which claims it once its claim expired (a lease) and delivers it
// again: delivery is at least once, and exactly once unless a replica
// dies delivering. A POST that fails is logged, not retried. The
// webhook policy (Config.WebhookAllow) is the delivering replica's.
//
// A run of an A2A task starts before the task's record lists it: its
// notice waits for both its end and that record (taskRecorded), and
// whichever comes second delivers it.

// runNotice is how the notice of a run stands in this process (guarded
// by run.mu).
type runNotice struct {
	// ended: the run ended, and its notice is this process's to deliver:
	// a run without replicas, or a replica's run it finished.
	ended bool
	// recorded: the record of the run's A2A task lists the run.
	recorded bool
	// taken: the notice was delivered, or is being.
	taken bool
}

// hasNotice reports whether ru's end has a notice: its Platform webhook,
// or its A2A task's end.
func (ru *run) hasNotice() bool {
	return ru.task != "" || ru.platform != nil && ru.platform.webhook != ""
}

// noticeReady notes that ru ended, or that its task's record lists it,
// and reports whether the caller delivers its notice now: once both are
// so (the record only for a run of a task), once.
func (ru *run) noticeReady(ended, recorded bool) bool {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	n := &ru.notice
	n.ended = n.ended || ended
	n.recorded = n.recorded || recorded
	if !n.ended || ru.task != "" && !n.recorded || n.taken {
		return false
	}
	n.taken = true
	return true
}

// endNotice delivers the notice of ru, which has ended (finally), when
// it is this process's: a run without replicas, once its task's record
// lists it; a replica's run it finished, when it claims it. A run that
// failed before it started has none: its error answered its request.
func (s *Server) endNotice(ru *run) {
	if !ru.hasNotice() || ru.earlyError() != nil {
		return
	}
	ctx := context.WithoutCancel(ru.ctx)
	if ru.claim == nil {
		if ru.noticeReady(true, false) {
			s.deliverNotice(ctx, placedIn(ru), ru.owner, ru.task)
		}
		return
	}
	ru.mu.Lock()
	finished := ru.notice.ended
	ru.mu.Unlock()
	if finished {
		s.claimNotice(ctx, ru.id)
	}
}

// taskRecorded tells the notice of p's run that its A2A task's record
// lists the run, and delivers it when the run had ended before.
func (s *Server) taskRecorded(ctx context.Context, p *placed) {
	if ru := p.ru; ru != nil {
		if ru.noticeReady(false, true) {
			s.deliverNotice(ctx, p, ru.owner, ru.task)
		}
		return
	}
	ended, err := s.cfg.Replicas.NoticeDue(ctx, p.id)
	if err != nil {
		s.log.ErrorContext(ctx, "server: a run's notice", "run", p.id, "err", err)
		return
	}
	if ended {
		s.claimNotice(ctx, p.id)
	}
}

// claimNotice claims and delivers the notice of the shared run id (""
// any whose replica did not deliver it, see Replicas.ClaimNotice), and
// reports whether it did.
func (s *Server) claimNotice(ctx context.Context, id string) bool {
	sr, ok, err := s.cfg.Replicas.ClaimNotice(ctx, id, s.replica.workflows)
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "server: claim a run's notice", "run", id, "err", err)
		}
		return false
	}
	if !ok {
		return false
	}
	req, err := sr.request()
	if err != nil {
		s.log.ErrorContext(ctx, "server: a run's notice", "run", sr.ID, "err", err)
	} else {
		s.deliverNotice(ctx, s.placedShared(sr, req), sr.Owner, req.Task)
	}
	if err := s.cfg.Replicas.NoticeSent(context.WithoutCancel(ctx), sr.ID); err != nil {
		s.log.ErrorContext(ctx, "server: record a run's notice sent", "run", sr.ID, "err", err)
	}
	return true
}

// noticeLoop delivers, every half lease, the notices of shared runs
// that their replicas did not deliver (they died: Replicas.ClaimNotice
// with no id), apart from the claim loop, so that a slow webhook delays
// no claim.
func (s *Server) noticeLoop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.LeaseTTL / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for more := true; more && ctx.Err() == nil; {
			more = s.claimNotice(ctx, "")
		}
	}
}

// deliverNotice delivers the notice of the run p of owner, which ended:
// its webhook, and the end of its A2A task (task; "" for none).
func (s *Server) deliverNotice(ctx context.Context, p *placed, owner, task string) {
	if p.platform != nil && p.platform.Webhook != "" {
		s.notifyWebhook(ctx, p)
	}
	if task != "" {
		s.endTask(ctx, owner, task, p)
	}
}
