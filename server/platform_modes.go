package server

import (
	"encoding/json"
	"strings"
)

// queryModes reads the values of ?stream_mode= in every form the SDKs
// send them — repeated (stream_mode=values&stream_mode=updates), a comma
// list (stream_mode=values,updates) or one JSON array
// (stream_mode=["values","updates"], @langchain/langgraph-sdk 2.x) — and
// returns them as the JSON list parseModes checks (nil when there are
// none: the run's own modes stay). A value that starts
// with [ and is not a JSON list of strings is kept as it was, so that
// parseModes names it as an unknown mode.
func queryModes(values []string) json.RawMessage {
	var modes []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		var list []string
		if strings.HasPrefix(v, "[") && json.Unmarshal([]byte(v), &list) == nil {
			modes = append(modes, list...)
			continue
		}
		for m := range strings.SplitSeq(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				modes = append(modes, m)
			}
		}
	}
	if len(modes) == 0 {
		return nil
	}
	raw, _ := json.Marshal(modes)
	return raw
}
