package board

// The namespaces of coorflow's context store: the first segment of every
// path. The store accepts any namespace (store.CheckPath); these are the
// ones coorflow reads and writes.
const (
	ProjectPrefix = "project/" // facts about the project: config, conventions, sources
	MemoryPrefix  = "memory/"  // long-term memory, archived transcripts
	MissionPrefix = "mission/" // mission boards, one per run: mission/<run-id>/...
	TeamPrefix    = "team/"    // the agents: specs, notes shared by a team
)

// TranscriptsPrefix is where archived run transcripts live:
// memory/transcripts/<run-id>/...
const TranscriptsPrefix = MemoryPrefix + "transcripts/"
