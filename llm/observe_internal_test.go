package llm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsToolCallChunk(t *testing.T) {
	for chunk, want := range map[string]bool{
		`[{"id":"call_1","type":"function","function":{"name":"add","arguments":""}}]`: true,
		`[{"type":"","function":{"name":"","arguments":"{\"a\":40,"}}]`:                true,
		`{"name":"add","arguments":"{}"}`:                                              true,
		`[1, 2, 3]`:                                                                    false,
		`[{"a":1}]`:                                                                    false,
		`{"name":"Ada"}`:                                                               false,
		`[{`:                                                                           false,
		`Hello`:                                                                        false,
		`{"name":"x","arguments":"y","extra":1}`:                                       false,
	} {
		assert.Equal(t, want, isToolCallChunk([]byte(chunk)), chunk)
	}
}
