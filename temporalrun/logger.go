package temporalrun

import (
	"io"
	"log/slog"

	"go.temporal.io/sdk/log"
)

// Logger is a logger for the SDK's client and workers that writes errors
// only, as text to w: the SDK logs every poll and retry otherwise.
func Logger(w io.Writer) log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelError})))
}
