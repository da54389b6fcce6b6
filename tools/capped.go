package tools

import (
	"strings"
	"unicode/utf8"
)

// cappedBuffer keeps the first max bytes written to it and counts the rest.
// Writes never fail, so a writer that produces too much is not blocked or
// killed by the cap.
type cappedBuffer struct {
	max   int
	buf   []byte
	total int64
}

func newCappedBuffer(max int) *cappedBuffer {
	return &cappedBuffer{max: max}
}

// Write keeps what fits and discards the rest.
func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns the kept bytes as valid UTF-8: a rune cut by the cap is
// dropped and invalid bytes are replaced.
func (c *cappedBuffer) String() string {
	b := c.buf
	if c.Truncated() {
		b = trimPartialRune(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Len is the number of bytes kept.
func (c *cappedBuffer) Len() int { return len(c.String()) }

// Total is the number of bytes written.
func (c *cappedBuffer) Total() int64 { return c.total }

// Truncated reports whether bytes were discarded.
func (c *cappedBuffer) Truncated() bool { return c.total > int64(len(c.buf)) }

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
