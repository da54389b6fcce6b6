//go:build !unix

package savertest

import "time"

// cpuTime reports that CPU time cannot be read here.
func cpuTime() (time.Duration, bool) { return 0, false }
