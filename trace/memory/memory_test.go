package memory_test

import (
	"testing"

	"github.com/coorflow/coorflow/trace"
	"github.com/coorflow/coorflow/trace/memory"
	"github.com/coorflow/coorflow/trace/tracetest"
)

func TestStore(t *testing.T) {
	tracetest.Run(t, func(t *testing.T) trace.Store { return memory.New() })
}
