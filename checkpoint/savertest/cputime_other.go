//go:build !unix

package savertest

import "time"

// CPUTime reports that CPU time cannot be read here.
func CPUTime() (time.Duration, bool) { return 0, false }
