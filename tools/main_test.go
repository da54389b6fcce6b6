package tools_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running:
// abandoned tool calls must end once their tool returns, and the python
// tool must not leave its pipe readers behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
