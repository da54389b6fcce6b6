// Package nodes holds the prebuilt nodes of the research and coor
// workflows and the channels they read and write (keys.go): the
// coordinator, the background investigator, the planner, the human review,
// the research team and its workers, the reporter, and the ask_human tool.
//
// A thread is a conversation (turns.go): each input the coordinator
// receives begins a turn, which sets the channels of one turn back to
// empty (plan, planner rounds, feedback...) and keeps the conversation
// (Messages, Turns) and what earlier turns found (Findings, each marked
// with its turn). The planner and the reporter see earlier turns as
// summaries with board references, never as transcripts.
//
// The agents the nodes run are ReAct agents (package nodes/react); the
// plans they make and carry out are plain data (package nodes/plan).
// Every model call goes through llm.Observe and every tool call through
// tools.Observe, so a node that runs again after an interrupt or a crash
// repeats neither.
package nodes
