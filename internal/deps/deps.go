// Package deps pins the project's chosen dependencies in go.mod while the
// packages that use them are being written. It is removed once every module
// listed here is imported by real code.
package deps

import (
	_ "github.com/expr-lang/expr"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "github.com/stretchr/testify/require"
	_ "github.com/tmc/langchaingo/llms/anthropic"
	_ "github.com/tmc/langchaingo/llms/googleai"
	_ "github.com/tmc/langchaingo/llms/ollama"
	_ "github.com/tmc/langchaingo/llms/openai"
	_ "github.com/tmc/langchaingo/tools"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/sdk/trace/tracetest"
	_ "go.uber.org/goleak"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
