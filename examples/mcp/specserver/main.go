// Command specserver is a small MCP server, spoken to over stdin and
// stdout: it answers questions about the Model Context Protocol from the
// notes it carries. examples/mcp starts it with `go run ./specserver` and
// its agents call its tools, search and read, as spec_search and
// spec_read.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// section is one note about the protocol.
type section struct {
	ID, Title, Text string
}

var sections = []section{
	{"transports", "Transports", "MCP messages are JSON-RPC 2.0. Over stdio the client starts the server as a child process and writes one message per line to its stdin, reading answers from its stdout. Over streamable HTTP the client POSTs each message to one endpoint; the server answers with JSON or with a stream of server-sent events, and names the session in the Mcp-Session-Id header."},
	{"progress", "Progress", "A client that wants progress on a long request puts a progressToken in the request's _meta. The server then sends notifications/progress with that token, a progress value that grows with each notification, and, when it knows it, the total. Progress stops when the request's result is sent."},
	{"cancellation", "Cancellation", "Either side may cancel a request it sent with notifications/cancelled, naming the request id and a reason. The receiver stops the work and sends no result; a result that crosses the notice is ignored."},
	{"elicitation", "Elicitation", "During a request a server may ask the user for information with elicitation/create: a message and a flat JSON Schema of the fields it wants (form mode), or a URL to visit (url mode). The client shows it and answers accept with the content, decline, or cancel. Clients advertise the elicitation capability; servers must not ask clients that lack it."},
	{"tools", "Tools", "A server lists its tools with tools/list: each has a name, a description and an input JSON Schema, and may have an output schema and annotations such as readOnlyHint. tools/call runs one; its result holds content (text, images, audio, resource links, embedded resources), optional structured content, and isError for failures the model should see."},
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"words to look for in the notes"`
}

type readArgs struct {
	Section string `json:"section" jsonschema:"the id of a section, as search returns it"`
}

func search(_ context.Context, _ *mcp.CallToolRequest, a searchArgs) (*mcp.CallToolResult, any, error) {
	var hits []string
	for _, s := range sections {
		for _, w := range strings.Fields(strings.ToLower(a.Query)) {
			if strings.Contains(strings.ToLower(s.Title+" "+s.Text), w) {
				hits = append(hits, fmt.Sprintf("%s: %s", s.ID, s.Title))
				break
			}
		}
	}
	if len(hits) == 0 {
		return text("No section matches %q. The sections are: transports, progress, cancellation, elicitation, tools.", a.Query), nil, nil
	}
	return text("Sections that match %q:\n%s", a.Query, strings.Join(hits, "\n")), nil, nil
}

func read(_ context.Context, _ *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, any, error) {
	for _, s := range sections {
		if s.ID == a.Section {
			return text("# %s\n%s", s.Title, s.Text), nil, nil
		}
	}
	res := text("There is no section %q; search lists the sections.", a.Section)
	res.IsError = true
	return res, nil, nil
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func main() {
	server := mcp.NewServer(&mcp.Implementation{Name: "spec", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "search", Description: "Find the sections of the MCP notes that mention some words.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, search)
	mcp.AddTool(server, &mcp.Tool{Name: "read", Description: "Read one section of the MCP notes.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, read)
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.SetOutput(os.Stderr)
		log.Fatal(err)
	}
}
