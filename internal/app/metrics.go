package app

import (
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// prices prices a model call as the runner does: a step's tokens at its
// agent's Price, a compaction summary's at the compaction's (the agent's
// when the summariser is the agent's own model).
func prices(agents turn.AgentMap) metrics.Prices {
	return func(c intercept.ModelCall) *reducer.Price {
		a, ok := agents.Agent(c.Agent)
		if !ok {
			return nil
		}
		if c.Request.Step > 0 || a.Compaction == nil {
			return a.Price
		}
		if a.Compaction.Price != nil || a.Compaction.Model != nil {
			return a.Compaction.Price
		}
		return a.Price
	}
}
