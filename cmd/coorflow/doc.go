// Command coorflow checks, draws, runs and serves coorflow workflows.
//
//	coorflow run examples/coor --input "Compare SQLite and PostgreSQL for an embedded agent engine"
//	coorflow validate FILE...            check files; every problem with file:line:column
//	coorflow graph FILE                  the graph as a Mermaid flowchart
//	coorflow threads list|show|history|rm
//	coorflow agents list|show|edit|rm
//	coorflow serve [FILE|DIR...]         the HTTP API over the workflows
//	coorflow schema                      the JSON Schema of workflow files
//
// Exit codes: 0 done; 1 the work failed (a run, the database); 2 the
// command line or a file is wrong (usage, invalid workflow, model
// configuration); 3 a run paused on a question nobody answered (the
// command to resume it is printed); 130 interrupted by Ctrl-C.
//
// Run `coorflow help` for every flag.
package main
