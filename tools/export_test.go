package tools

import "time"

// PythonTimesOutOn makes the python tool t time out when c receives or
// is closed, instead of after its timeout, so that a test can time a run
// out once the code has done what the test waits for.
func PythonTimesOutOn(t Tool, c <-chan time.Time) {
	t.(*pythonTool).after = func(time.Duration) <-chan time.Time { return c }
}
