package conformance

import (
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// step is the pause between a fixture's notifications, so that a client
// receives them while the call runs rather than all at its end.
const step = 50 * time.Millisecond

// pause waits for d or until the call's context ends.
func pause(ctx *tools.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func toolWithLogging() *tools.Tool {
	return tools.New("test_tool_with_logging", "Send three info log messages while running.", readOnly("Tool with logging"),
		func(ctx *tools.Context, _ NoParams) (tools.Result[noValue], error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := pause(ctx, step); err != nil {
						return tools.Result[noValue]{}, err
					}
				}
				if err := ctx.Log("info", msg); err != nil {
					return tools.Result[noValue]{}, err
				}
			}
			return ok("Tool with logging executed successfully."), nil
		})
}

func toolWithProgress() *tools.Tool {
	return tools.New("test_tool_with_progress", "Report progress 0, 50 and 100 of 100 while running.", readOnly("Tool with progress"),
		func(ctx *tools.Context, _ NoParams) (tools.Result[noValue], error) {
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					if err := pause(ctx, step); err != nil {
						return tools.Result[noValue]{}, err
					}
				}
				if err := ctx.Progress(p, 100, ""); err != nil {
					return tools.Result[noValue]{}, err
				}
			}
			return ok("Tool with progress executed successfully."), nil
		})
}

func reconnection() *tools.Tool {
	return tools.New("test_reconnection", "Close the response stream mid-call; the result arrives after the client resumes.", readOnly("Reconnection"),
		func(ctx *tools.Context, _ NoParams) (tools.Result[noValue], error) {
			if err := pause(ctx, step); err != nil {
				return tools.Result[noValue]{}, err
			}
			ctx.CloseStream()
			if err := pause(ctx, 2*step); err != nil {
				return tools.Result[noValue]{}, err
			}
			return ok("Reconnection test completed."), nil
		})
}
