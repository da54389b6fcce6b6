package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// record is what the journal keeps of a call: the result as the model
// reads it.
type record struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
}

// render turns a call's result into text for the model. Text parts are
// kept as they are; embedded text resources with their URI; resource links
// as a line each; images, audio and blobs inline as data: URIs up to
// maxInline bytes, described beyond; structured content as JSON unless a
// text part already holds the same value. The whole is cut at maxText
// bytes, with a note saying so.
func render(res *sdk.CallToolResult, maxText, maxInline int) record {
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, renderContent(c, maxInline))
	}
	if res.StructuredContent != nil && !textHolds(res.Content, res.StructuredContent) {
		if js, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, "Structured result: "+string(js))
		}
	}
	return record{Text: capText(strings.Join(parts, "\n"), maxText), IsError: res.IsError}
}

func renderContent(c sdk.Content, maxInline int) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return inline("image", c.MIMEType, c.Data, maxInline)
	case *sdk.AudioContent:
		return inline("audio", c.MIMEType, c.Data, maxInline)
	case *sdk.ResourceLink:
		return resourceLink(c)
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource: empty]"
		}
		if r.Blob != nil {
			return fmt.Sprintf("[resource %s] ", r.URI) + inline("blob", r.MIMEType, r.Blob, maxInline)
		}
		head := "[resource " + r.URI
		if r.MIMEType != "" {
			head += " (" + r.MIMEType + ")"
		}
		return head + "]\n" + r.Text
	}
	js, err := json.Marshal(c)
	if err != nil {
		return fmt.Sprintf("[content of type %T]", c)
	}
	return string(js)
}

func resourceLink(c *sdk.ResourceLink) string {
	var b strings.Builder
	b.WriteString("[resource link: " + c.URI)
	if c.Name != "" {
		b.WriteString(" name=" + quoteIfSpaced(c.Name))
	}
	if c.MIMEType != "" {
		b.WriteString(" type=" + c.MIMEType)
	}
	if c.Size != nil {
		fmt.Fprintf(&b, " size=%d", *c.Size)
	}
	b.WriteString("]")
	if c.Description != "" {
		b.WriteString(" " + c.Description)
	}
	return b.String()
}

func quoteIfSpaced(s string) string {
	if strings.ContainsAny(s, " \t\n\"") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// inline renders binary content as a data: URI when it is small enough.
func inline(kind, mime string, data []byte, max int) string {
	if mime == "" {
		mime = "application/octet-stream"
	}
	head := fmt.Sprintf("[%s %s, %d bytes", kind, mime, len(data))
	if len(data) > max {
		return head + fmt.Sprintf(": larger than %d bytes, not included]", max)
	}
	return head + "] data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// textHolds reports whether a text part holds the same JSON value as v.
func textHolds(content []sdk.Content, v any) bool {
	js, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var want any
	if json.Unmarshal(js, &want) != nil {
		return false
	}
	for _, c := range content {
		t, ok := c.(*sdk.TextContent)
		if !ok {
			continue
		}
		var got any
		dec := json.NewDecoder(bytes.NewReader([]byte(t.Text)))
		if dec.Decode(&got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

// capText cuts s to at most max bytes (on a rune boundary) and says so.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[… the result was cut: %d of %d bytes shown]", cut, len(s))
}
