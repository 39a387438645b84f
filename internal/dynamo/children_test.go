package dynamo

import (
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// TestHeadOfAChild: the head of a child session whose ended turn waits to
// reach its parent is due for the report, and reads back (the tick pages
// it); a parent waiting for its children is not due at all; a parent
// whose ended turn left a child running is due for the cascade.
func TestHeadOfAChild(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	child := reducer.State{Agent: "a", Status: reducer.Idle, LastSeq: 4, Created: at, Updated: at, Turns: 1,
		Parent: &reducer.Parent{Session: "p", Turn: "t", ToolCallID: "c", Depth: 1}}
	h, err := decodeHead(headItem("s1", child))
	if err != nil || h.Why != reducer.ReasonReport || !h.Due.Equal(at) {
		t.Fatalf("child head: %+v, %v", h, err)
	}
	parent := reducer.State{Agent: "a", Status: reducer.Suspended, LastSeq: 5, Created: at, Updated: at,
		Turn: &reducer.Turn{ID: "t", Cause: reducer.CauseChildren, Children: []reducer.Child{{ID: "s1", ToolCallID: "c", Agent: "a"}}}}
	if h, err := decodeHead(headItem("p", parent)); err != nil || !h.Due.IsZero() || h.Cause != reducer.CauseChildren {
		t.Fatalf("parent head: %+v, %v", h, err)
	}
	parent.Status, parent.Turn, parent.Turns = reducer.Idle, nil, 1
	parent.Orphans = []reducer.Orphan{{ID: "s1", Turn: "t", Ended: reducer.TurnCancelled}}
	if h, err := decodeHead(headItem("p", parent)); err != nil || h.Why != reducer.ReasonCascade || !h.Due.Equal(at) {
		t.Fatalf("parent head with an orphan: %+v, %v", h, err)
	}
}
