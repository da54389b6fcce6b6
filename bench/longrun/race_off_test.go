//go:build !race

package longrun_test

// raceDetector: see race_on_test.go.
const raceDetector = false
