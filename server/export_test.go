package server

import (
	"context"
	"time"
)

// Routes lists the patterns s serves, for tests that must cover them all.
func Routes(s *Server) []string {
	return append([]string(nil), s.routes...)
}

// RunCounts returns the owners' counts of runs in progress and queued.
func RunCounts(s *Server) map[string][2]int {
	owners := s.manager.Ledger().Owners()
	out := make(map[string][2]int, len(owners))
	for owner, u := range owners {
		out[owner] = [2]int{u.Active, u.Queued}
	}
	return out
}

// PlatformNotServed lists the Platform routes the server answers 501.
func PlatformNotServed() []string {
	return sortedKeys(platformNotServed)
}

// FireCrons starts the runs of the crons due at now, as the scheduler
// does when its timer fires.
func FireCrons(s *Server, now time.Time) { s.fireCrons(context.Background(), now) }

// PruneRuns prunes the ended shared runs, as the claim loop does.
func PruneRuns(s *Server) { s.pruneShared(context.Background()) }
