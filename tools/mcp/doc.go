// Package mcp makes the tools of Model Context Protocol servers coorflow
// tools: a Toolset connects to its servers — programs it starts and speaks
// to over stdin and stdout, or streamable HTTP endpoints — and offers each
// server's tools, with their JSON Schemas, as tools.Tools that a Registry,
// a ReAct agent, the builder of dynamic agents and YAML tool nodes use like
// any other. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
//	ts, err := mcp.NewToolset(mcp.Config{Servers: []mcp.Server{
//		{Name: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}},
//		{Name: "docs", URL: "https://mcp.example.com/mcp", Bearer: os.Getenv("DOCS_TOKEN")},
//	}})
//	if err != nil { ... }
//	defer ts.Close()
//	reg := &tools.Registry{}
//	if err := ts.Register(ctx, reg); err != nil { ... } // everything_echo, docs_search, ...
//
// Names. A tool is registered as "<server>_<tool>", with the characters
// model providers refuse in function names replaced by '_'; a name that
// would be longer than 64 bytes or collide gets a short hash suffix.
//
// Sessions. Each server has one session, started on first use and shared
// by everyone who uses the toolset; its tools are listed after the
// handshake (a notice that they changed, sent before, could be lost) and
// again when the server says they changed. A stdio server that exits, an
// HTTP connection that drops, or an HTTP server that restarted and no
// longer knows the session (it answers 404, or 400) is reconnected on the
// next call; a request such a server refused is sent again once, since it
// did not run. Close ends the sessions and stops the stdio servers (their
// whole process group).
//
// Calls. A call has the Server's timeout and is cancelled on the server
// (notifications/cancelled) when its context ends. A result the server
// marks as an error, a lost connection and an unreachable server become
// errors that tools.Run turns into tool results a model can act on. Text
// is kept as it is; embedded resources with their URI; resource links as a
// line; images, audio and blobs inline as data: URIs up to MaxInlineBytes;
// structured content as JSON; the whole cut at MaxResultBytes. Inside a
// running graph node each call is journaled (graph.Do), so a node that
// runs again — after an interrupt or a crash — gets the recorded result
// instead of calling the server again; and the window of a ReAct agent
// offloads a large result like any other tool's.
//
// Progress and questions. A server's progress notifications become
// custom events (graph.Emit) whose Data is a Progress, under the call's
// path. A server's question to the user (elicitation) becomes an
// interrupt (graph.Interrupt) whose payload is an Elicitation: the run
// pauses, and when it is resumed the call is made again and the answer
// given on resume goes to the server.
//
// Environment. A stdio server's environment holds only DefaultInheritEnv
// (PATH, HOME...), the names in Server.InheritEnv, and Server.Env: nothing
// else of coorflow's environment — API keys included — reaches it.
package mcp
