package runs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEventBufferKeepsTheNewestWithinItsLimits(t *testing.T) {
	tests := []struct {
		name        string
		maxFrames   int
		maxBytes    int
		sizes       []int // of the frames appended, in order
		after       int64
		wantIDs     []int64
		wantDropped int64
	}{
		{"AllKept", 10, 1000, []int{1, 1, 1}, 0, []int64{1, 2, 3}, 0},
		{"AfterSkipsSeen", 10, 1000, []int{1, 1, 1}, 2, []int64{3}, 0},
		{"AfterTheEnd", 10, 1000, []int{1, 1, 1}, 7, nil, 0},
		{"CountLimit", 2, 1000, []int{1, 1, 1, 1}, 0, []int64{3, 4}, 2},
		{"CountLimitSeenPartly", 2, 1000, []int{1, 1, 1, 1}, 1, []int64{3, 4}, 1},
		{"ByteLimit", 10, 5, []int{2, 2, 2, 2}, 0, []int64{3, 4}, 2},
		{"TheNewestStaysWhateverItsSize", 10, 5, []int{2, 50}, 0, []int64{2}, 1},
		{"ManyAppendsCompact", 10, 1 << 20, make([]int, 500), 0, []int64{491, 492, 493, 494, 495, 496, 497, 498, 499, 500}, 490},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l EventBuffer
			l.Init(tt.maxFrames, tt.maxBytes)
			for _, n := range tt.sizes {
				l.Append("custom", []byte(strings.Repeat("x", n)))
			}
			frames, dropped, closed, _ := l.Since(tt.after, nil)
			var ids []int64
			for _, f := range frames {
				ids = append(ids, f.ID)
			}
			assert.Equal(t, tt.wantIDs, ids)
			assert.Equal(t, tt.wantDropped, dropped)
			assert.False(t, closed)
			assert.Equal(t, int64(len(tt.sizes)), l.Count())
			assert.LessOrEqual(t, len(l.frames), 2*tt.maxFrames+32, "dropped frames do not pile up")
		})
	}
}

func TestEventBufferWakesWaitingReaders(t *testing.T) {
	var l EventBuffer
	l.Init(10, 100)
	_, _, _, wake := l.Since(0, nil)
	select {
	case <-wake:
		t.Fatal("woken with nothing new")
	default:
	}
	l.Append("custom", []byte("a"))
	<-wake
	frames, _, _, wake := l.Since(1, nil)
	assert.Empty(t, frames)
	l.Close()
	<-wake
	_, _, closed, _ := l.Since(1, nil)
	assert.True(t, closed)
}
