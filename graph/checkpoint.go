package graph

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// checkpointFormat is the version of checkpointMeta. Reading a checkpoint
// of another version is an error, never a guess.
const checkpointFormat = 1

// ErrCorruptCheckpoint: a stored checkpoint cannot be read (unknown format,
// bad encoding, a missing channel version).
var ErrCorruptCheckpoint = errors.New("graph: corrupt checkpoint")

// checkpointMeta is what the engine stores in CheckpointRecord.Meta.
type checkpointMeta struct {
	Format int    `json:"format"`
	Graph  string `json:"graph"`
	// Versions maps each channel holding a value to its version: the id
	// of the checkpoint that last changed it.
	Versions map[string]string `json:"versions"`
	// Writers are the tasks whose writes produced this checkpoint.
	Writers []string       `json:"writers,omitempty"`
	Next    scheduleRecord `json:"next"`
	// Output holds, in a subgraph's run, the step's writes to channels it
	// shares with its parent: what the subgraph node returns.
	Output []writeRecord `json:"output,omitempty"`
}

type scheduleRecord struct {
	Triggered []string       `json:"triggered,omitempty"`
	Packets   []packetRecord `json:"packets,omitempty"`
	Deferred  []string       `json:"deferred,omitempty"`
	// Seen holds, per join (by index), which of its sources have run.
	Seen [][]bool `json:"seen,omitempty"`
}

type packetRecord struct {
	Node   string        `json:"node"`
	Writes []writeRecord `json:"writes,omitempty"`
}

type writeRecord struct {
	Channel string          `json:"channel"`
	Value   json.RawMessage `json:"value"`
}

// newID returns a unique id that sorts by creation time: 16 hex digits of
// nanoseconds, then 8 random ones.
func newID() string {
	var b [12]byte
	n := uint64(time.Now().UnixNano())
	for i := 7; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	r := rand.Uint32()
	b[8], b[9], b[10], b[11] = byte(r>>24), byte(r>>16), byte(r>>8), byte(r)
	return hex.EncodeToString(b[:])
}

func decodeMeta(rec CheckpointRecord) (checkpointMeta, error) {
	var m checkpointMeta
	if err := json.Unmarshal(rec.Meta, &m); err != nil {
		return m, fmt.Errorf("%w: thread %q checkpoint %q: %w", ErrCorruptCheckpoint, rec.Thread, rec.ID, err)
	}
	if m.Format != checkpointFormat {
		return m, fmt.Errorf("%w: thread %q checkpoint %q has format %d; this version of coorflow reads format %d",
			ErrCorruptCheckpoint, rec.Thread, rec.ID, m.Format, checkpointFormat)
	}
	return m, nil
}

func (l *layout) encodeWrites(ws []Write) ([]writeRecord, error) {
	out := make([]writeRecord, len(ws))
	for i, w := range ws {
		ch, _, ok := l.channel(w.Channel())
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownChannel, w.Channel())
		}
		data, err := ch.encode(w.value)
		if err != nil {
			return nil, err
		}
		out[i] = writeRecord{Channel: ch.Name(), Value: data}
	}
	return out, nil
}

func (l *layout) decodeWrites(rs []writeRecord) ([]Write, error) {
	out := make([]Write, len(rs))
	for i, r := range rs {
		ch, _, ok := l.channel(r.Channel)
		if !ok {
			return nil, fmt.Errorf("%w %q (the graph no longer declares it)", ErrUnknownChannel, r.Channel)
		}
		v, err := ch.decode(r.Value)
		if err != nil {
			return nil, err
		}
		out[i] = Write{ch: ch, value: v}
	}
	return out, nil
}

// valueCache rebuilds channel values from blobs, following delta chains.
// With shared set, values it returns may be read by several callers, so a
// delta is applied onto a clipped view of its base (History); otherwise the
// one caller owns each chain and deltas append in place (resume).
type valueCache struct {
	blobs  map[string]map[string]Blob // channel -> version -> blob
	memo   map[string]map[string]any
	shared bool
}

// loadBlobs reads the blobs of versions (channel -> version), or every
// version of the channels whose version is "".
func (ru *run) loadBlobs(ctx context.Context, s Saver, thread, ns string, versions map[string]string, shared bool) (*valueCache, error) {
	var bs []Blob
	var err error
	if slices.Contains(slices.Collect(maps.Values(versions)), "") {
		bs, err = s.Blobs(ctx, thread, ns, slices.Collect(maps.Keys(versions)))
	} else {
		bs, err = ReadBlobsAt(ctx, s, thread, ns, versions)
	}
	if err != nil {
		return nil, fmt.Errorf("graph: thread %q: read channel values: %w", thread, err)
	}
	vc := &valueCache{blobs: make(map[string]map[string]Blob), memo: make(map[string]map[string]any), shared: shared}
	for _, b := range bs {
		if vc.blobs[b.Channel] == nil {
			vc.blobs[b.Channel] = make(map[string]Blob)
		}
		vc.blobs[b.Channel][b.Version] = b
	}
	return vc, nil
}

// value rebuilds channel ch at version.
func (vc *valueCache) value(ch Channel, version string) (any, error) {
	name := ch.Name()
	if v, ok := vc.memo[name][version]; ok {
		return v, nil
	}
	// Walk back to a full value, then apply deltas forward.
	var chain []Blob
	var cur any
	for v := version; ; {
		if m, ok := vc.memo[name][v]; ok && vc.shared {
			cur = m
			break
		}
		b, ok := vc.blobs[name][v]
		if !ok {
			return nil, fmt.Errorf("%w: channel %q version %q is missing", ErrCorruptCheckpoint, name, v)
		}
		chain = append(chain, b)
		if b.Base == "" {
			break
		}
		if len(chain) > len(vc.blobs[name]) {
			return nil, fmt.Errorf("%w: channel %q has a cycle in its versions", ErrCorruptCheckpoint, name)
		}
		v = b.Base
	}
	for i := len(chain) - 1; i >= 0; i-- {
		b := chain[i]
		d, err := ch.decode(b.Data)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
		}
		if b.Base == "" && cur == nil {
			cur = d
		} else {
			if vc.shared {
				cur = ch.view(cur)
			}
			cur = ch.reduce(cur, true, []any{d})
		}
		if vc.shared {
			if vc.memo[name] == nil {
				vc.memo[name] = make(map[string]any)
			}
			vc.memo[name][b.Version] = cur
		}
	}
	return cur, nil
}

// sizes sets, by slot, the stored size of each channel's value at the
// checkpoint m: the bytes of its blob and of the blobs it builds on.
func (vc *valueCache) sizes(l *layout, m checkpointMeta, out []int) {
	for name, version := range m.Versions {
		_, slot, ok := l.channel(name)
		if !ok {
			continue
		}
		n := 0
		for v, hops := version, 0; v != "" && hops <= len(vc.blobs[name]); hops++ {
			b, ok := vc.blobs[name][v]
			if !ok {
				break
			}
			n += len(b.Data)
			v = b.Base
		}
		out[slot] = n
	}
}

// stateAt rebuilds the channel values of a checkpoint. Channels the graph
// no longer declares are ignored.
func (l *layout) stateAt(vc *valueCache, m checkpointMeta) (*stateData, error) {
	vals := make([]any, len(l.channels))
	for name, version := range m.Versions {
		ch, slot, ok := l.channel(name)
		if !ok {
			continue
		}
		v, err := vc.value(ch, version)
		if err != nil {
			return nil, err
		}
		vals[slot] = v
	}
	return &stateData{layout: l, vals: vals}, nil
}
