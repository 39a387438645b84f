package agents_test

import (
	"testing"

	"github.com/baton-run/baton/internal/agentspec"
	"github.com/baton-run/baton/internal/wake"
)

// TestWakeDelayBoundIsTheWakers: the agent check refuses a wake delay past
// the one the waker can send (agentspec has its own copy, as it links no
// SQS client).
func TestWakeDelayBoundIsTheWakers(t *testing.T) {
	if agentspec.MaxWakeDelay != wake.MaxDelay {
		t.Fatalf("agentspec.MaxWakeDelay %s, wake.MaxDelay %s: want the same", agentspec.MaxWakeDelay, wake.MaxDelay)
	}
}
