package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/tools"
)

const codeSchema = `{"type":"object","properties":{"code":{"type":"string"},"retries":{"type":"integer","minimum":0}},"required":["code"],"additionalProperties":false}`

func TestRunOK(t *testing.T) {
	tl := tools.Func("echo", "", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		return "got " + string(args), nil
	})
	res := tools.Run(t.Context(), tl, json.RawMessage(`{"a":1}`), tools.RunOptions{})
	assert.Equal(t, tools.StatusOK, res.Status)
	assert.Equal(t, "echo", res.Tool)
	assert.Equal(t, `got {"a":1}`, res.Output)
	assert.Equal(t, `got {"a":1}`, res.Text())
	assert.NoError(t, res.Err)
	assert.Positive(t, res.Duration)
}

func TestRunEmptyArgumentsAreAnEmptyObject(t *testing.T) {
	tl := tools.Func("now", "", nil, func(_ context.Context, args json.RawMessage) (string, error) {
		return string(args), nil
	})
	for _, args := range []string{"", "  \n"} {
		res := tools.Run(t.Context(), tl, json.RawMessage(args), tools.RunOptions{})
		require.Equal(t, tools.StatusOK, res.Status, res.Text())
		assert.Equal(t, "{}", res.Output)
	}
}

func TestRunRejectsArgumentsThatDoNotMatchTheSchema(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		problems []tools.ArgumentProblem
		errMsg   string
		text     string
	}{
		{
			name:     "wrong type",
			args:     `{"code":42}`,
			problems: []tools.ArgumentProblem{{Field: "/code", Message: "expected string, but got number"}},
			errMsg:   `tools: invalid arguments for tool "python": code: expected string, but got number`,
			text: "Error: invalid arguments for tool \"python\":\n" +
				"- code: expected string, but got number\n" +
				"The arguments must match this JSON Schema: " + codeSchema + "\n" +
				"Correct the arguments and call the tool again.",
		},
		{
			name:     "missing required field",
			args:     `{}`,
			problems: []tools.ArgumentProblem{{Message: "missing properties: 'code'"}},
			errMsg:   `tools: invalid arguments for tool "python": missing properties: 'code'`,
		},
		{
			name: "two problems at once",
			args: `{"code":"print(1)","retries":-1,"lang":"py"}`,
			problems: []tools.ArgumentProblem{
				{Field: "/retries", Message: "must be >= 0 but found -1"},
				{Message: "additionalProperties 'lang' not allowed"},
			},
			errMsg: `tools: invalid arguments for tool "python": retries: must be >= 0 but found -1; additionalProperties 'lang' not allowed`,
		},
		{
			name:     "not JSON",
			args:     `{"code": print(1)}`,
			problems: []tools.ArgumentProblem{{Message: "the arguments are not valid JSON: invalid character 'p' looking for beginning of value"}},
			errMsg:   `tools: invalid arguments for tool "python": the arguments are not valid JSON: invalid character 'p' looking for beginning of value`,
		},
		{
			name:     "data after the object",
			args:     `{"code":"1"} {"code":"2"}`,
			problems: []tools.ArgumentProblem{{Message: "the arguments are not valid JSON: unexpected data after the arguments object"}},
		},
		{
			name:     "not an object",
			args:     `["print(1)"]`,
			problems: []tools.ArgumentProblem{{Message: "expected object, but got array"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			tl := tools.Func("python", "", json.RawMessage(codeSchema), func(context.Context, json.RawMessage) (string, error) {
				calls.Add(1)
				return "ran", nil
			})
			res := tools.Run(t.Context(), tl, json.RawMessage(tt.args), tools.RunOptions{})
			require.Equal(t, tools.StatusFailed, res.Status)
			assert.Zero(t, calls.Load(), "the tool is not called with bad arguments")
			require.ErrorIs(t, res.Err, tools.ErrInvalidArguments)
			var ae *tools.ArgumentError
			require.ErrorAs(t, res.Err, &ae)
			assert.Equal(t, "python", ae.Tool)
			assert.Equal(t, tt.problems, ae.Problems)
			if tt.errMsg != "" {
				assert.EqualError(t, res.Err, tt.errMsg)
			}
			if tt.text != "" {
				assert.Equal(t, tt.text, res.Text())
			}
		})
	}
}

func TestRunToolErrorIsAFailedResult(t *testing.T) {
	errDiskFull := errors.New("disk full")
	tl := tools.Func("save", "", nil, func(context.Context, json.RawMessage) (string, error) {
		return "", errDiskFull
	})
	res := tools.Run(t.Context(), tl, nil, tools.RunOptions{})
	assert.Equal(t, tools.StatusFailed, res.Status)
	assert.ErrorIs(t, res.Err, errDiskFull)
	var te *tools.ToolError
	require.ErrorAs(t, res.Err, &te)
	assert.Equal(t, "save", te.Tool)
	assert.EqualError(t, res.Err, `tools: tool "save" failed: disk full`)
	assert.Equal(t, `Error: tool "save" failed: disk full`, res.Text())
}

func TestRunPanicBecomesAnErrorNamingTheTool(t *testing.T) {
	tests := []struct {
		name   string
		value  any
		errMsg string
		text   string
	}{
		{name: "string", value: "boom", errMsg: `tools: tool "bomb" panicked: boom`, text: `Error: tool "bomb" crashed: boom`},
		{name: "error", value: errors.New("nil map"), errMsg: `tools: tool "bomb" panicked: nil map`, text: `Error: tool "bomb" crashed: nil map`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tools.Func("bomb", "", nil, func(context.Context, json.RawMessage) (string, error) {
				panic(tt.value)
			})
			res := tools.Run(t.Context(), tl, nil, tools.RunOptions{})
			assert.Equal(t, tools.StatusFailed, res.Status)
			require.ErrorIs(t, res.Err, tools.ErrToolPanic)
			var pe *tools.PanicError
			require.ErrorAs(t, res.Err, &pe)
			assert.Equal(t, tt.value, pe.Value)
			assert.Contains(t, string(pe.Stack), "run_test.go")
			assert.EqualError(t, res.Err, tt.errMsg)
			assert.Equal(t, tt.text, res.Text())
			if err, ok := tt.value.(error); ok {
				assert.ErrorIs(t, res.Err, err)
			}
		})
	}
}

// stuck returns a tool that ignores its context until release is closed,
// and closes returned when it finally returns.
func stuck(name string, release <-chan struct{}, returned chan<- struct{}) tools.Tool {
	return tools.Func(name, "", nil, func(context.Context, json.RawMessage) (string, error) {
		defer close(returned)
		<-release
		return "too late", nil
	})
}

func TestRunTimeoutGivesADegradedResultWithoutWaitingForTheTool(t *testing.T) {
	release, returned := make(chan struct{}), make(chan struct{})
	tl := stuck("slow", release, returned)

	res := tools.Run(t.Context(), tl, nil, tools.RunOptions{Timeout: 50 * time.Millisecond})

	select {
	case <-returned:
		t.Fatal("the tool returned before it was released: Run cannot have waited for it")
	default:
	}
	assert.Equal(t, tools.StatusDegraded, res.Status)
	assert.NoError(t, res.Err)
	assert.Equal(t, `tool "slow" did not answer within 50ms; continue with what you have.`, res.Output)
	assert.Equal(t, res.Output, res.Text())
	assert.GreaterOrEqual(t, res.Duration, 50*time.Millisecond)

	close(release)
	<-returned // the abandoned goroutine finishes once the tool returns
}

func TestRunToolThatHonoursItsContextIsDegradedAtTheDeadline(t *testing.T) {
	tl := tools.Func("polite", "", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	res := tools.Run(t.Context(), tl, nil, tools.RunOptions{Timeout: 20 * time.Millisecond})
	assert.Equal(t, tools.StatusDegraded, res.Status)
	assert.Equal(t, `tool "polite" did not answer within 20ms; continue with what you have.`, res.Output)
}

func TestRunTimeoutPrecedence(t *testing.T) {
	// deadline reports how far away the call's deadline is.
	deadline := tools.Func("deadline", "", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return "none", nil
		}
		return time.Until(d).Round(time.Second).String(), nil
	})
	tests := []struct {
		name string
		tool tools.Tool
		opts tools.RunOptions
		want string
	}{
		{name: "default", tool: deadline, want: "30s"},
		{name: "tool timeout", tool: tools.WithTimeout(deadline, 5*time.Second), want: "5s"},
		{name: "call timeout wins", tool: tools.WithTimeout(deadline, 5*time.Second), opts: tools.RunOptions{Timeout: 9 * time.Second}, want: "9s"},
		{name: "zero tool timeout means default", tool: tools.WithTimeout(deadline, 0), want: "30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tools.Run(t.Context(), tt.tool, nil, tt.opts)
			require.Equal(t, tools.StatusOK, res.Status, res.Text())
			assert.Equal(t, tt.want, res.Output)
		})
	}
	assert.Equal(t, 30*time.Second, tools.DefaultTimeout)
}

func TestRunCancelledByTheCallerFails(t *testing.T) {
	release, returned := make(chan struct{}), make(chan struct{})
	started := make(chan struct{})
	tl := tools.Func("slow", "", nil, func(context.Context, json.RawMessage) (string, error) {
		defer close(returned)
		close(started)
		<-release
		return "", nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	res := tools.Run(ctx, tl, nil, tools.RunOptions{})
	assert.Equal(t, tools.StatusFailed, res.Status)
	require.ErrorIs(t, res.Err, context.Canceled)
	assert.EqualError(t, res.Err, `tools: tool "slow" abandoned: context canceled`)
	close(release)
	<-returned
}

func TestRunWithADoneContextDoesNotCallTheTool(t *testing.T) {
	var calls atomic.Int32
	tl := tools.Func("t", "", nil, func(context.Context, json.RawMessage) (string, error) {
		calls.Add(1)
		return "", nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := tools.Run(ctx, tl, nil, tools.RunOptions{})
	assert.Equal(t, tools.StatusFailed, res.Status)
	assert.EqualError(t, res.Err, `tools: tool "t" not called: context canceled`)
	assert.Zero(t, calls.Load())
}

func TestRunToolWithAnInvalidSchemaFails(t *testing.T) {
	tl := tools.Func("arr", "", json.RawMessage(`{"type":"array"}`), nil)
	res := tools.Run(t.Context(), tl, nil, tools.RunOptions{})
	assert.Equal(t, tools.StatusFailed, res.Status)
	require.ErrorIs(t, res.Err, tools.ErrInvalidSchema)
	assert.Equal(t, `Error: invalid argument schema of tool "arr": the top level must have "type": "object"`, res.Text())
}

func TestRegistryRunUnknownToolTellsTheModelWhatExists(t *testing.T) {
	reg, err := tools.NewRegistry(echo("python"), echo("web_search"))
	require.NoError(t, err)
	res := reg.Run(t.Context(), "search_the_web", json.RawMessage(`{"q":"go"}`), tools.RunOptions{})
	assert.Equal(t, tools.StatusFailed, res.Status)
	assert.Equal(t, "search_the_web", res.Tool)
	require.ErrorIs(t, res.Err, tools.ErrUnknownTool)
	assert.Equal(t, `Error: there is no tool named "search_the_web". The tools you can call are: python, web_search.`, res.Text())
}

func TestRegistryRunKnownTool(t *testing.T) {
	reg, err := tools.NewRegistry(echo("echo"))
	require.NoError(t, err)
	res := reg.Run(t.Context(), "echo", json.RawMessage(`{"text":"hi"}`), tools.RunOptions{})
	assert.Equal(t, tools.StatusOK, res.Status)
	assert.Equal(t, `{"text":"hi"}`, res.Output)
}

func TestTypedDecodesArguments(t *testing.T) {
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add := tools.Typed("add", "Adds two integers.", json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`),
		func(_ context.Context, in args) (string, error) {
			return strconv.Itoa(in.A + in.B), nil
		})
	res := tools.Run(t.Context(), add, json.RawMessage(`{"a":2,"b":3}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "5", res.Output)

	// A schema looser than the Go type: the decoding error reaches the model.
	loose := tools.Typed("loose", "", json.RawMessage(`{"type":"object","properties":{}}`), func(_ context.Context, in args) (string, error) { return "", nil })
	res = tools.Run(t.Context(), loose, json.RawMessage(`{"a":"two"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	require.ErrorIs(t, res.Err, tools.ErrInvalidArguments)
	assert.Equal(t, "Error: invalid arguments for tool \"loose\":\n"+
		"- json: cannot unmarshal string into Go struct field args.a of type int\n"+
		"The arguments must match this JSON Schema: {\"type\":\"object\",\"properties\":{}}\n"+
		"Correct the arguments and call the tool again.", res.Text())
}

func TestStatusString(t *testing.T) {
	assert.Equal(t, "ok", tools.StatusOK.String())
	assert.Equal(t, "degraded", tools.StatusDegraded.String())
	assert.Equal(t, "failed", tools.StatusFailed.String())
	assert.Equal(t, "Status(0)", tools.Status(0).String())
}

func TestErrorTextOfOtherErrors(t *testing.T) {
	assert.Empty(t, tools.ErrorText(nil))
	assert.Equal(t, "Error: something odd", tools.ErrorText(errors.New("something odd")))
	assert.Equal(t, "Error: tool \"t\" not called: context canceled",
		tools.ErrorText(fmt.Errorf("tools: tool %q not called: %w", "t", context.Canceled)), "the package prefix is left out")
}
