package sqlite

import (
	"encoding/hex"

	"github.com/coorflow/coorflow/graph"
)

// Blobs in the checkpoint's row. The engine gives each blob a checkpoint
// introduces the checkpoint's id as version, and most are small (a delta:
// a message appended, a number added). Such blobs are kept in the
// checkpoint's row, in its blobs column, rather than in checkpoint_blobs:
// a step then writes one row to three B-trees in one statement, where a
// row in the blobs table would be a fourth B-tree (about two more pages
// per commit) and a transaction around the two statements.
//
// A blob (channel, version) is found in checkpoint_blobs, or else in the
// blobs column of the checkpoint whose id is the version. A blob is stored
// once, the first time (graph.Saver): a row of checkpoint_blobs is not
// inserted when the checkpoint's row holds the blob already, and reads
// take the checkpoint_blobs row when both exist (it can only have come
// first: a checkpoint's row is written once).

// maxInline bounds the data, in bytes, of the blobs one checkpoint's row
// holds: with the meta data, the row stays within one 1 KiB page, and
// larger blobs go to checkpoint_blobs.
const maxInline = 256

// splitBlobs returns the blobs of cp that go in its row, encoded for its
// blobs column (nil for none), and the others, for checkpoint_blobs. Of
// blobs given twice (same channel and version) the first is kept, as the
// table keeps it.
func splitBlobs(cp graph.CheckpointRecord, blobs []graph.Blob) (inline any, rest []graph.Blob) {
	var buf []byte
	var seen []string // channels inlined
	size := 0
	for i, b := range blobs {
		if b.Version != cp.ID || size+len(b.Data) > maxInline || !plain(b.Channel) || !plain(b.Base) ||
			inlined(seen, b.Channel) || inTable(blobs[:i], b) {
			rest = append(rest, b)
			continue
		}
		size += len(b.Data)
		seen = append(seen, b.Channel)
		if buf == nil {
			buf = append(make([]byte, 0, 64+2*maxInline), '{')
		} else {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, b.Channel...)
		buf = append(buf, '"', ':', '[', '"')
		buf = append(buf, b.Base...)
		buf = append(buf, '"', ',', '"')
		buf = hex.AppendEncode(buf, b.Data)
		buf = append(buf, '"', ']')
	}
	if buf == nil {
		return nil, rest
	}
	return string(append(buf, '}')), rest
}

// inlined reports whether channel is among seen.
func inlined(seen []string, channel string) bool {
	for _, c := range seen {
		if c == channel {
			return true
		}
	}
	return false
}

// inTable reports whether a blob of b's channel and version comes before
// it in earlier and goes to checkpoint_blobs (it was not inlined), so that
// it, the first, is the one kept.
func inTable(earlier []graph.Blob, b graph.Blob) bool {
	for _, e := range earlier {
		if e.Channel == b.Channel && e.Version == b.Version {
			return true
		}
	}
	return false
}

// plain reports whether s is printable ASCII without quotes or
// backslashes: a JSON string of its own bytes, read back by SQLite's JSON
// functions as it is. Blobs with other names go to checkpoint_blobs.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
