package window

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/tools"
)

// ReadContextName is the name of the read_context tool.
const ReadContextName = "read_context"

// Page sizes of read_context, in bytes.
const (
	DefaultReadBytes = store.DefaultReadLimit // 16 KiB, about 4,000 tokens
	MaxReadBytes     = 64 << 10
)

// ReadArgs are the arguments of read_context.
type ReadArgs struct {
	// Ref is the reference shown in place of the offloaded text.
	Ref string `json:"ref"`
	// Offset is the byte offset to read from: 0, then each page's
	// next_offset.
	Offset int64 `json:"offset,omitempty"`
	// Limit is the page size in bytes (default DefaultReadBytes, at most
	// MaxReadBytes).
	Limit int64 `json:"limit,omitempty"`
}

// ReadPage is what read_context returns, as JSON.
type ReadPage struct {
	Ref string `json:"ref"`
	// Offset is where Content starts; NextOffset where the next page
	// starts; Size the text's length in bytes.
	Offset     int64 `json:"offset"`
	NextOffset int64 `json:"next_offset"`
	Size       int64 `json:"size"`
	// EOF is true when Content reaches the end of the text.
	EOF     bool   `json:"eof"`
	Content string `json:"content"`
}

var readContextSchema = json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "ref": {"type": "string", "minLength": 1, "description": "The reference of the offloaded text, as shown in the context (e.g. mission/run-1/outputs/tool-results/...)."},
    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start from: 0 for the first page, then the next_offset of the previous page."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Page size in bytes (default %d)."}
  },
  "required": ["ref"],
  "additionalProperties": false
}`, MaxReadBytes, DefaultReadBytes))

// ReadContextTool returns the read_context tool: it reads text that the
// window moved out of a prompt (an offloaded tool result, a full agent
// output, archived history) back page by page from r, and answers with a
// ReadPage as JSON. A reference the agent may not see, or an offset past
// the end, is an error the model can read.
func ReadContextTool(r Reader) tools.Tool {
	return tools.Typed(ReadContextName,
		"Read text that was moved out of your context — an offloaded tool result, a full agent output, an archived conversation — page by page. "+
			"Pass the ref shown in its place; start at offset 0 and continue from next_offset until eof is true.",
		readContextSchema,
		func(ctx context.Context, args ReadArgs) (string, error) {
			if r == nil {
				return "", ErrNoReader
			}
			return readPage(ctx, r, args)
		})
}

func readPage(ctx context.Context, r Reader, args ReadArgs) (string, error) {
	limit := args.Limit
	if limit <= 0 {
		limit = DefaultReadBytes
	}
	limit = min(limit, MaxReadBytes)
	c, err := r.Read(ctx, args.Ref, args.Offset, limit)
	if err != nil {
		return "", fmt.Errorf("window: read_context %q at offset %d: %w", args.Ref, args.Offset, err)
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err = enc.Encode(ReadPage{Ref: args.Ref, Offset: c.Offset, NextOffset: c.Next, Size: c.Size, EOF: c.EOF, Content: c.Content})
	if err != nil {
		return "", fmt.Errorf("window: read_context: encode page: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
