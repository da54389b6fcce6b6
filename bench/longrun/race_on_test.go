//go:build race

package longrun_test

// raceDetector: under -race the long run measures only keep-everything
// and every mechanism together, the runs its assertions need; the table
// of each mechanism is for runs without it.
const raceDetector = true
