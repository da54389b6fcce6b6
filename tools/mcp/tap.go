package mcp

import (
	"bytes"
	"encoding/json"
	"io"
)

// maxTapLine is how much of a message the tap looks at: progress
// notifications are small, and a longer line is not one.
const maxTapLine = 4 << 10

var progressMethod = []byte(`"notifications/progress"`)

// progressTap watches a server's messages as they are read, before the SDK
// decodes them, and counts its progress notifications by token. A call
// then ends only once every notification that came before its result has
// been handled: the SDK hands notifications to their handler on another
// goroutine, which the result could otherwise overtake.
type progressTap struct {
	r    io.Reader
	note func(token string)
	sse  bool // lines are server-sent events: "data: {...}"
	line []byte
	long bool // the current line is longer than maxTapLine
}

func (p *progressTap) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.scan(b[:n])
	return n, err
}

func (p *progressTap) Close() error {
	if c, ok := p.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (p *progressTap) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !p.long {
			if len(p.line)+len(chunk) > maxTapLine {
				p.long, p.line = true, p.line[:0]
			} else {
				p.line = append(p.line, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !p.long {
			p.check(p.line)
		}
		p.line, p.long, b = p.line[:0], false, b[i+1:]
	}
}

// check counts line if it is a progress notification the SDK will hand to
// its handler.
func (p *progressTap) check(line []byte) {
	if p.sse {
		var ok bool
		if line, ok = bytes.CutPrefix(line, []byte("data:")); !ok {
			return
		}
	}
	if !bytes.Contains(line, progressMethod) {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params *struct {
			ProgressToken any      `json:"progressToken"`
			Progress      *float64 `json:"progress"`
		} `json:"params"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &msg) != nil || msg.ID != nil || msg.Method != "notifications/progress" || msg.Params == nil || msg.Params.Progress == nil {
		return
	}
	if token, ok := msg.Params.ProgressToken.(string); ok {
		p.note(token)
	}
}
