// Command coorflow checks, draws, runs and serves coorflow workflows.
//
//	coorflow run examples/coor --input "Compare SQLite and PostgreSQL for an embedded agent engine"
//	coorflow validate FILE...            check files; every problem with file:line:column
//	coorflow graph FILE                  the graph as a Mermaid flowchart
//	coorflow threads list|show|history|rm
//	coorflow agents list|show|edit|rm
//	coorflow runs list|show RUN|prune    the recorded runs: every run and resume of run and serve
//	coorflow replay RUN                  run a recorded run again offline, from its recorded model responses
//	coorflow export RUN -o FILE          a finished coor run as a workflow file with its plan and agents fixed
//	coorflow serve [FILE|DIR...]         the HTTP API over the workflows (tokens from --token-file or $COORFLOW_TOKENS)
//	coorflow worker [FILE|DIR...]        a Temporal worker for the workflows (run and serve --temporal submit to it)
//	coorflow schema                      the JSON Schema of workflow files
//
// Exit codes: 0 done; 1 the work failed (a run, the database, an unknown
// thread or run, a replay that diverged from its recording); 2 the command
// line or a file is wrong (usage, invalid workflow, model configuration, a
// run that cannot be replayed or exported); 3 a run paused on a question
// nobody answered (the command to resume it is printed); 130 interrupted
// by Ctrl-C.
//
// Run `coorflow help` for every flag.
package main
