package geminitest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Request is a request the Server received.
type Request struct {
	Method string      // HTTP method
	Path   string      // URL path, e.g. "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
	Query  url.Values  // query parameters; the client sends the API key as "key"
	Header http.Header // request headers
	Body   []byte      // raw body
	// Model is the model named in the path, e.g. "gemini-2.0-flash".
	Model string
	// RPC is "streamGenerateContent" or "generateContent".
	RPC string
	// Generate is Body decoded; zero if it was not a generate request.
	Generate GenerateRequest
}

// APIKey returns the API key the request carried, in the query or the
// x-goog-api-key header.
func (r Request) APIKey() string {
	if k := r.Query.Get("key"); k != "" {
		return k
	}
	return r.Header.Get("x-goog-api-key")
}

// GenerateRequest is the part of a GenerateContentRequest tests look at.
type GenerateRequest struct {
	Model             string          `json:"model"`             // "models/<name>"
	Contents          []Content       `json:"contents"`          // conversation
	SystemInstruction *Content        `json:"systemInstruction"` // system prompt, if any
	Tools             []Tool          `json:"tools"`             // tools offered
	GenerationConfig  json.RawMessage `json:"generationConfig"`  // as sent
}

// ToolNames returns the names of the functions offered.
func (r GenerateRequest) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	return names
}

// Content is a turn of the conversation.
type Content struct {
	Role  string `json:"role"` // user, model or system
	Parts []Part `json:"parts"`
}

// Text returns the text of the content's text parts, joined.
func (c Content) Text() string {
	var texts []string
	for _, p := range c.Parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Part is a part of a turn: text, a function call or a function's
// response.
type Part struct {
	Text         string `json:"text"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// Tool is a tool offered in a request.
type Tool struct {
	FunctionDeclarations []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"functionDeclarations"`
}
