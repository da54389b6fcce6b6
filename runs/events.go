package runs

import "sync"

// Frame is one encoded event of a run in its EventBuffer.
type Frame struct {
	// ID numbers the run's events from 1 (a stream's Last-Event-ID).
	ID int64
	// Name is the event's name (graph.Event.Name).
	Name string
	// Data is the event as the buffer's user encoded it.
	Data []byte
}

// EventBuffer keeps the most recent events of a run, within a count and a
// size, for streams that attach at any time (and re-attach after an id,
// Last-Event-ID). One goroutine appends; any number read. Once the run
// has ended and no stream reads them, the frames are dropped: a finished
// run's events are read back from its recording, if any.
//
// The zero EventBuffer is not ready: Init it.
type EventBuffer struct {
	mu sync.Mutex
	// frames[head:] are held, oldest first.
	frames    []Frame
	head      int
	bytes     int
	maxFrames int
	maxBytes  int
	next      int64 // id of the next frame
	closed    bool
	readers   int // streams attached
	// wake is closed at the next append or at close, when a reader is
	// waiting on it.
	wake    chan struct{}
	waiting bool
}

// Init readies the buffer to hold at most maxFrames frames of at most
// maxBytes in all (the newest frame is always held).
func (l *EventBuffer) Init(maxFrames, maxBytes int) {
	l.maxFrames, l.maxBytes = maxFrames, maxBytes
	l.next = 1
	l.wake = make(chan struct{})
}

// ContinueAfter numbers the next frame after last: a run taken over goes
// on from the events another process appended. Call it before the first
// Append.
func (l *EventBuffer) ContinueAfter(last int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = last + 1
}

// NextID is the id the next appended frame gets; only the appender calls it.
func (l *EventBuffer) NextID() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Append adds a frame and drops the oldest ones beyond the limits; the
// newest frame is always kept.
func (l *EventBuffer) Append(name string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frames = append(l.frames, Frame{ID: l.next, Name: name, Data: data})
	l.next++
	l.bytes += len(data)
	for held := len(l.frames) - l.head; held > 1 && (held > l.maxFrames || l.bytes > l.maxBytes); held-- {
		l.bytes -= len(l.frames[l.head].Data)
		l.frames[l.head] = Frame{}
		l.head++
	}
	if l.head >= 32 && l.head*2 >= len(l.frames) {
		n := copy(l.frames, l.frames[l.head:])
		clear(l.frames[n:])
		l.frames, l.head = l.frames[:n], 0
	}
	l.signal()
}

func (l *EventBuffer) signal() {
	if l.waiting {
		close(l.wake)
		l.wake = make(chan struct{})
		l.waiting = false
	}
}

// Close marks the end of the run's events.
func (l *EventBuffer) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.signal()
	l.releaseLocked()
}

// Attach keeps the frames, even after Close, until the matching Detach:
// a stream attaches before it reads.
func (l *EventBuffer) Attach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readers++
}

// Detach ends what Attach began.
func (l *EventBuffer) Detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.readers--
	l.releaseLocked()
}

// releaseLocked drops the frames of a closed buffer no stream reads;
// Since reports them as dropped. l.mu is held.
func (l *EventBuffer) releaseLocked() {
	if l.closed && l.readers == 0 {
		l.frames, l.head, l.bytes = nil, 0, 0
	}
}

// Count is the number of frames appended.
func (l *EventBuffer) Count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// Since returns the held frames after id after (appended to buf), how
// many frames after it were dropped, whether the buffer is closed, and a
// channel closed when there is more to read.
func (l *EventBuffer) Since(after int64, buf []Frame) (frames []Frame, dropped int64, closed bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.frames[l.head:]
	first := l.next - int64(len(held)) // id of the oldest held frame
	if after < first-1 {
		dropped = first - 1 - after
		after = first - 1
	}
	if skip := after - (first - 1); skip < int64(len(held)) {
		buf = append(buf, held[skip:]...)
	}
	if len(buf) == 0 && !l.closed {
		l.waiting = true
	}
	return buf, dropped, l.closed, l.wake
}
