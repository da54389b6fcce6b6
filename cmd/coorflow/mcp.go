package main

import "context"

func (a *app) mcpServe(ctx context.Context, args []string) error {
	return usagef("mcp: not yet")
}
