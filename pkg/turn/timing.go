package turn

import (
	"sync"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
)

// timing is what the next step's metadata says of the time since the step
// before: the span of the tool runs (tools of one step may run at once)
// and when the checkpoint before the step began. The console draws them
// as the step before's tool time and checkpoint (see
// conversation.StepTimes).
type timing struct {
	mu                     sync.Mutex
	toolsBegan, toolsEnded time.Time
	checkpoint             time.Time
}

// tool widens the tool span to a run from began to now.
func (t *timing) tool(began time.Time) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.toolsBegan.IsZero() || began.Before(t.toolsBegan) {
		t.toolsBegan = began
	}
	if now.After(t.toolsEnded) {
		t.toolsEnded = now
	}
}

// checkpointed notes that the checkpoint before the next step begins now.
func (t *timing) checkpointed() {
	t.mu.Lock()
	t.checkpoint = time.Now()
	t.mu.Unlock()
}

// times are the step times so far for a step whose model call began
// began; reset starts afresh once the step is done.
func (t *timing) times(began time.Time) conversation.StepTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	return conversation.StepTimes{Began: began, ToolsBegan: t.toolsBegan, ToolsEnded: t.toolsEnded, Checkpoint: t.checkpoint}
}

func (t *timing) reset() {
	t.mu.Lock()
	t.toolsBegan, t.toolsEnded, t.checkpoint = time.Time{}, time.Time{}, time.Time{}
	t.mu.Unlock()
}
