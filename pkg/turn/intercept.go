package turn

import (
	"github.com/baton-run/baton/internal/intercept"
)

// hooks are a run's interceptor chains (see Runner.Interceptors); each is
// nil when no interceptor wraps that kind of call, and the run then makes
// the call directly.
type hooks struct {
	model intercept.ModelFunc
	tool  intercept.ToolFunc
	step  intercept.StepFunc
}
