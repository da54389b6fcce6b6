// Package nodes holds the prebuilt nodes of the research and coor
// workflows and the channels they read and write (keys.go): the
// coordinator, the background investigator, the planner, the human review,
// the research team and its workers, the reporter, and the ask_human tool.
//
// The agents the nodes run are ReAct agents (package nodes/react); the
// plans they make and carry out are plain data (package nodes/plan).
// Every model call goes through llm.Observe and every tool call through
// tools.Observe, so a node that runs again after an interrupt or a crash
// repeats neither.
package nodes
