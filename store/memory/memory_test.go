package memory_test

import (
	"testing"

	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/store/memory"
	"github.com/coorflow/coorflow/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return memory.New(store.Config{})
	})
}
