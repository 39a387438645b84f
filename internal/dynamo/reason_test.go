package dynamo

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/pkg/reducer"
)

// A head stores the typed reason of reducer.State.Next, and heads written
// before the reason was typed, with the free-form "lease", "approval",
// "wake" or "inbox", read back as the same reasons.
func TestHeadReason(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	wakeAt := at.Add(time.Minute)
	st := reducer.State{Agent: "a", Status: reducer.Suspended, LastSeq: 4, Created: at, Updated: at,
		Turn: &reducer.Turn{ID: "t1", Cause: reducer.CauseThrottled, Faults: 1, Wake: wakeAt}}
	item := headItem("s1", st)
	h, err := decodeHead(item)
	if err != nil {
		t.Fatal(err)
	}
	if h.Why != reducer.ReasonFault || !h.Due.Equal(wakeAt) || strAttr(item, attrWhy) != "fault" {
		t.Fatalf("fault-suspended head: why %q due %v", h.Why, h.Due)
	}
	timer := reducer.State{Agent: "a", Status: reducer.Suspended, LastSeq: 4, Created: at, Updated: at,
		Turn: &reducer.Turn{ID: "t1", Cause: reducer.CauseTimer, Wake: at.Add(72 * time.Hour)}}
	if h, err := decodeHead(headItem("s1", timer)); err != nil || h.Why != reducer.ReasonTimer || !h.Due.Equal(at.Add(72*time.Hour)) {
		t.Fatalf("timer head: %+v, %v", h, err)
	}
	for _, old := range []struct {
		stored string
		state  reducer.State
		want   reducer.Reason
	}{
		{"lease", reducer.State{Agent: "a", Status: reducer.Running, LastSeq: 3, Created: at, Updated: at,
			Turn: &reducer.Turn{ID: "t1", Lease: wakeAt}}, reducer.ReasonLease},
		{"approval", reducer.State{Agent: "a", Status: reducer.Suspended, LastSeq: 4, Created: at, Updated: at,
			Turn: &reducer.Turn{ID: "t1", Cause: reducer.CauseApproval,
				Pending: []reducer.Approval{{ID: "ap1", ToolCallID: "c1", Expires: wakeAt}}}}, reducer.ReasonApproval},
		{"wake", reducer.State{Agent: "a", Status: reducer.Suspended, LastSeq: 4, Created: at, Updated: at,
			Turn: &reducer.Turn{ID: "t1", Cause: reducer.CauseBudget}}, reducer.ReasonWake},
		{"inbox", reducer.State{Agent: "a", Status: reducer.Idle, LastSeq: 2, Created: at, Updated: at,
			Inbox: []reducer.Message{{ID: "m1", Text: "hi"}}}, reducer.ReasonInbox},
	} {
		item := headItem("s1", old.state)
		item[attrWhy] = &types.AttributeValueMemberS{Value: old.stored}
		h, err := decodeHead(item)
		if err != nil || h.Why != old.want {
			t.Errorf("stored why %q: read %q, %v", old.stored, h.Why, err)
		}
	}
}
