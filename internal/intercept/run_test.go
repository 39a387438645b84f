package intercept_test

import (
	"context"
	"testing"

	"github.com/baton-run/baton/internal/intercept"
)

// TestRuns: run interceptors wrap in order and see the run's trace; with
// none wrapping runs the chain is nil.
func TestRuns(t *testing.T) {
	var seen []string
	ic := func(name string) intercept.Interceptor {
		return intercept.Interceptor{Run: func(next intercept.RunFunc) intercept.RunFunc {
			return func(ctx context.Context, r intercept.Run) (intercept.RunEnd, error) {
				seen = append(seen, name+" "+r.Trace)
				return next(ctx, r)
			}
		}}
	}
	if intercept.Runs([]intercept.Interceptor{{}}, nil) != nil {
		t.Fatal("a chain of runs with no run interceptor")
	}
	f := intercept.Runs([]intercept.Interceptor{ic("a"), {}, ic("b")}, func(context.Context, intercept.Run) (intercept.RunEnd, error) {
		return intercept.RunEnd{Kind: "completed", Steps: 2}, nil
	})
	end, err := f(context.Background(), intercept.Run{Trace: "tp"})
	if err != nil || end.Kind != "completed" || end.Steps != 2 || len(seen) != 2 || seen[0] != "a tp" || seen[1] != "b tp" {
		t.Errorf("end %+v %v, seen %q", end, err, seen)
	}
}
