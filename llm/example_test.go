package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coorflow/coorflow/llm"
)

// A configuration names the environment variable of each key; the
// environment can also switch the basic model.
func ExampleNew() {
	cfg, err := llm.LoadConfig(strings.NewReader(`
models:
  basic:
    provider: openai
    model: gpt-4o-mini
  reasoning:
    provider: anthropic
    model: claude-sonnet-4-20250514
    api_key_env: MY_ANTHROPIC_KEY
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if err := cfg.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		fmt.Println(err)
		return
	}
	_, err = llm.New(context.Background(), cfg)
	fmt.Println(err)
	fmt.Println(errors.Is(err, llm.ErrMissingAPIKey))

	env["MY_ANTHROPIC_KEY"] = "sk-ant-test"
	models, err := llm.New(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer models.Close()
	fmt.Printf("%+v\n", models.Profile(llm.TierReasoning))
	fmt.Printf("%+v\n", models.Profile(llm.TierCode)) // falls back to basic
	// Output:
	// llm: line 9: models.reasoning.api_key_env: environment variable MY_ANTHROPIC_KEY is not set (it should hold the anthropic API key)
	// true
	// {Provider:anthropic Model:claude-sonnet-4-20250514 MaxInputTokens:200000 Price:<nil>}
	// {Provider:openai Model:gpt-4o-mini MaxInputTokens:128000 Price:<nil>}
}

func ExampleClassify() {
	err := llm.Classify(errors.New("API returned unexpected status code: 429: Rate limit reached"))
	fmt.Println(errors.Is(err, llm.ErrRateLimited), llm.IsRetryable(err))
	// Output: true true
}

func ExampleEstimateTokens() {
	fmt.Println(llm.EstimateTokens("Hello, world!"), llm.EstimateTokens("你好，世界"))
	// Output: 4 5
}
