package factory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine of a team — builds, steps — outlives its run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
