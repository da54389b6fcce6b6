//go:build !temporal

package main

import (
	"context"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/server"
)

// withoutTemporal is what worker and run --temporal say in a build without
// the Temporal SDK: it links gRPC and doubles the binary, so it is opt-in.
const withoutTemporal = "this coorflow was built without Temporal; build one with it: go build -tags temporal ./cmd/coorflow (or go install -tags temporal)"

// worker would run a Temporal worker (worker.go, built with -tags temporal).
func (a *app) worker(ctx context.Context, args []string) error {
	return usagef("worker: %s", withoutTemporal)
}

// submitTo would send the run to Temporal's workers.
func (r *runner) submitTo(ctx context.Context, addr, queue string, timeouts *temporalTimeouts) (func(), error) {
	if err := timeouts.check("run"); err != nil {
		return nil, err
	}
	return nil, usagef("run --temporal: %s", withoutTemporal)
}

// temporalExecutors would submit the served runs to Temporal's workers.
func (a *app) temporalExecutors(ctx context.Context, addr, queue string, timeouts *temporalTimeouts, served map[string]*graph.Runnable, base *db) (map[string]server.Executor, func(), error) {
	if err := timeouts.check("serve"); err != nil {
		return nil, nil, err
	}
	return nil, nil, usagef("serve --temporal: %s", withoutTemporal)
}
