package store

// RuntimeOwner is the key of the run-time value (graph.WithRuntime) by
// which a host — the HTTP server, the CLI — names the owner a run acts
// for: the owner whose items the run's nodes and agents read and write.
const RuntimeOwner = "coorflow.owner"
