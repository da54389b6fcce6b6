package temporalrun_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/temporalrun"
)

// lossyStarts is a gRPC client interceptor that makes the first start of
// a workflow fail as a server under load makes it fail: before the
// request reaches the server (lost) or after the server started the
// workflow (its answer lost, and only once the run has ended, so a start
// sent again would be free to start a second run). Both fail with
// DeadlineExceeded, which the SDK does not retry itself.
type lossyStarts struct {
	answerLost bool
	// ended waits until the started workflow has ended.
	ended  func(ctx context.Context, id string) error
	starts atomic.Int32
	once   sync.Once
}

func (l *lossyStarts) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start, ok := req.(*workflowservice.StartWorkflowExecutionRequest)
	if !ok {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	l.starts.Add(1)
	first := false
	l.once.Do(func() { first = true })
	if !first {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	if !l.answerLost {
		return status.Error(codes.DeadlineExceeded, "lossy: the start did not reach the server")
	}
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
		return err
	}
	if err := l.ended(ctx, start.GetWorkflowId()); err != nil {
		return err
	}
	return status.Error(codes.DeadlineExceeded, "lossy: the server started the workflow, its answer was lost")
}

// TestAStartThatFailsTransientlyIsRetriedAndStartsTheRunOnce: a start the
// server never got is sent again; a start whose answer was lost after the
// server started the run — and the run ended — is not: the run's nodes ran
// once, the input was applied once, and the thread has one workflow.
func TestAStartThatFailsTransientlyIsRetriedAndStartsTheRunOnce(t *testing.T) {
	e := newEnv(t)
	e.startWorker(e.queue, false)
	for _, lost := range []bool{false, true} {
		name := map[bool]string{false: "request lost", true: "answer lost"}[lost]
		t.Run(name, func(t *testing.T) {
			l := &lossyStarts{answerLost: lost}
			c, err := client.Dial(client.Options{HostPort: e.server.HostPort, Namespace: "default",
				ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(l.intercept)}},
				Logger:            temporalrun.Logger(os.Stderr)})
			require.NoError(t, err)
			defer c.Close()
			l.ended = func(ctx context.Context, id string) error {
				return c.GetWorkflow(ctx, id, "").Get(ctx, nil)
			}
			var runs atomic.Int32
			g := graph.New("start-"+randomHex(), callLog)
			g.AddNode("once", func(ctx context.Context, s graph.State) (graph.Command, error) {
				runs.Add(1)
				return graph.Update(graph.AppendTo(callLog, "once")), nil
			})
			g.AddEdge(graph.Start, "once")
			g.AddEdge("once", graph.End)
			r, err := g.Compile()
			require.NoError(t, err)
			e.graphs.Add(r)
			run, err := temporalrun.New(temporalrun.Config{Client: c, Graph: r, Saver: e.saver, TaskQueue: e.queue})
			require.NoError(t, err)
			thread := "start-" + randomHex()
			res, err := run.Invoke(t.Context(), graph.Input(graph.AppendTo(callLog, "input")), graph.Thread(thread))
			require.NoError(t, err)
			assert.Equal(t, graph.StatusDone, res.Status)
			assert.Equal(t, []string{"input", "once"}, callLog.Get(res.State), "the input applied once, the node ran once")
			assert.EqualValues(t, 1, runs.Load(), "the node ran once")
			// A lost request is sent again; a lost answer is found in the
			// thread's workflow, which carries the start's id.
			assert.EqualValues(t, map[bool]int32{false: 2, true: 1}[lost], l.starts.Load(), "starts sent")
		})
	}
}
