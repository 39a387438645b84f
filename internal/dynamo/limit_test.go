package dynamo

import (
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// A head of a turn suspended at a spend limit passes the head check and
// is out of the due index (only an operator moves it) until a raise lets
// it resume.
func TestHeadOfALimitSuspension(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := reducer.State{Agent: "a", Status: reducer.Suspended, LastSeq: 4, Created: at, Updated: at,
		Turn: &reducer.Turn{ID: "t1", Cause: reducer.CauseLimit}}
	item := headItem("s1", st)
	h, err := decodeHead(item)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkHead(item, h); err != nil {
		t.Fatalf("head check: %v", err)
	}
	if h.Why != "" || !h.Due.IsZero() || h.Cause != reducer.CauseLimit {
		t.Fatalf("limit head: why %q due %v cause %q", h.Why, h.Due, h.Cause)
	}
	st.Turn.Raised = true
	if h, err = decodeHead(headItem("s1", st)); err != nil || h.Why != reducer.ReasonWake || !h.Due.Equal(at) {
		t.Fatalf("raised limit head: why %q due %v, %v", h.Why, h.Due, err)
	}
}
