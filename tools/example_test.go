package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/coorflow/coorflow/tools"
)

func Example() {
	upper := tools.Typed("upper", "Upper-cases a text.",
		json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		func(ctx context.Context, args struct {
			Text string `json:"text"`
		}) (string, error) {
			return strings.ToUpper(args.Text), nil
		})
	reg, err := tools.NewRegistry(upper)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	res := reg.Run(ctx, "upper", json.RawMessage(`{"text":"hello"}`), tools.RunOptions{})
	fmt.Println(res.Status, res.Text())

	res = reg.Run(ctx, "upper", json.RawMessage(`{"text":42}`), tools.RunOptions{})
	fmt.Println(res.Status, res.Text())

	res = reg.Run(ctx, "lower", json.RawMessage(`{"text":"HELLO"}`), tools.RunOptions{})
	fmt.Println(res.Status, res.Text())
	// Output:
	// ok HELLO
	// failed Error: invalid arguments for tool "upper":
	// - text: expected string, but got number
	// The arguments must match this JSON Schema: {"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}
	// Correct the arguments and call the tool again.
	// failed Error: there is no tool named "lower". The tools you can call are: upper.
}

func ExampleRun_timeout() {
	slow := tools.Func("slow", "Takes its time.", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done() // a well-behaved tool gives up when its context ends
		return "", ctx.Err()
	})
	res := tools.Run(context.Background(), slow, nil, tools.RunOptions{Timeout: 10 * time.Millisecond})
	fmt.Println(res.Status)
	fmt.Println(res.Text())
	// Output:
	// degraded
	// tool "slow" did not answer within 10ms; continue with what you have.
}
