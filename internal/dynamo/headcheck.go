package dynamo

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/pkg/reducer"
)

// ErrCorruptHead is matched when a head item breaks the layout headItem
// writes: a missing or mistyped attribute, an unknown status, or attributes
// that contradict each other.
var ErrCorruptHead = errors.New("dynamo: corrupt head item")

// headAttrs are the attributes headItem may write.
var headAttrs = map[string]bool{
	attrPK: true, attrSK: true, attrLastSeq: true, attrStatus: true, attrAgent: true, attrOwner: true,
	attrCreated: true, attrUpdated: true, attrTurn: true, attrCause: true, attrDueShard: true, attrDue: true, attrWhy: true, attrRewoken: true,
	attrInputTokens: true, attrOutputTokens: true, attrSteps: true, attrCost: true,
}

// dueWhys are the reasons State.Next gives with a due time: the only ones
// a head's index attributes hold.
var dueWhys = map[reducer.Reason]bool{
	reducer.ReasonLease: true, reducer.ReasonApproval: true, reducer.ReasonWake: true,
	reducer.ReasonFault: true, reducer.ReasonInbox: true, reducer.ReasonTimer: true, reducer.ReasonSchedule: true,
	reducer.ReasonReport:   true, // a child session's end waits to reach its parent
	reducer.ReasonCascade:  true, // an ended turn's running children wait to be cancelled
	reducer.ReasonShow:     true, // a child's approval requests wait to reach its ancestors
	reducer.ReasonCallback: true, // callbacks wait for their ends, the first deadline due
}

// checkHead checks that item, decoded as h, is one headItem could have
// written.
func checkHead(item map[string]types.AttributeValue, h Head) error {
	if err := checkHeadAttrs(item, h); err != nil {
		return err
	}
	if err := checkHeadState(h); err != nil {
		return err
	}
	return checkHeadDue(item, h)
}

// corruptHead is an ErrCorruptHead saying what is wrong.
func corruptHead(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptHead, fmt.Sprintf(format, args...))
}

// checkHeadAttrs checks the item's attributes: only known ones, each of
// its type, the strings not empty and the counts positive.
func checkHeadAttrs(item map[string]types.AttributeValue, h Head) error {
	for name := range item {
		if !headAttrs[name] {
			return corruptHead("unexpected attribute %q", name)
		}
	}
	if sk, ok := item[attrSK].(*types.AttributeValueMemberN); !ok || sk.Value != headSK {
		return corruptHead("attribute %s is not the number %s", attrSK, headSK)
	}
	for _, name := range []string{attrPK, attrStatus, attrAgent, attrCreated, attrUpdated} {
		if v, ok := item[name].(*types.AttributeValueMemberS); !ok || v.Value == "" {
			return corruptHead("attribute %s is missing, empty or not a string", name)
		}
	}
	for _, name := range []string{attrOwner, attrTurn, attrCause, attrDueShard, attrWhy} {
		if v, ok := item[name]; ok {
			if s, isS := v.(*types.AttributeValueMemberS); !isS || s.Value == "" {
				return corruptHead("attribute %s is not a non-empty string", name)
			}
		}
	}
	for _, a := range usageAttrs(&h.Usage) {
		if _, ok := item[a.name]; ok && *a.v <= 0 {
			return corruptHead("attribute %s is %d, not a positive count", a.name, *a.v)
		}
	}
	return nil
}

// checkHeadState checks the head's session, status, turn and cause agree.
func checkHeadState(h Head) error {
	switch {
	case h.Session == "":
		return corruptHead("no session id")
	case h.Agent == "":
		return corruptHead("no agent")
	case h.LastSeq < 1:
		return corruptHead("last seq %d", h.LastSeq)
	}
	switch h.Status {
	case reducer.Idle:
		if h.Turn != "" {
			return corruptHead("idle with open turn %q", h.Turn)
		}
	case reducer.Running, reducer.Suspended:
		if h.Turn == "" {
			return corruptHead("%s without an open turn", h.Status)
		}
	default:
		return corruptHead("unknown status %q", h.Status)
	}
	switch {
	case h.Cause == "":
		if h.Status == reducer.Suspended {
			return corruptHead("suspended without a cause")
		}
	case h.Cause.Known():
		if h.Status != reducer.Suspended {
			return corruptHead("%s with cause %q", h.Status, h.Cause)
		}
	default:
		return corruptHead("unknown cause %q", h.Cause)
	}
	return nil
}

// checkHeadDue checks the head's due entry: its shard, due time and reason
// all present or all absent, and the reason one the status allows.
func checkHeadDue(item map[string]types.AttributeValue, h Head) error {
	_, hasShard := item[attrDueShard]
	_, hasDue := item[attrDue]
	_, hasWhy := item[attrWhy]
	switch {
	case hasShard != hasDue || hasDue != hasWhy:
		return corruptHead("%s, %s and %s must be all present or all absent", attrDueShard, attrDue, attrWhy)
	case hasShard && !validShardKey(h.Session, strAttr(item, attrDueShard)):
		return corruptHead("%s %q is not the session's shard", attrDueShard, strAttr(item, attrDueShard))
	case hasWhy && !dueWhys[h.Why]:
		return corruptHead("unknown %s %q", attrWhy, h.Why)
	case !h.Rewoken.IsZero() && !h.Why.Wake():
		return corruptHead("%s with %s %q: only a session waiting for a wake has it re-sent", attrRewoken, attrWhy, h.Why)
	case (h.Status == reducer.Running) != (h.Why == reducer.ReasonLease):
		return corruptHead("%s with %s %q: a running session, and only one, is due for its lease", h.Status, attrWhy, h.Why)
	case h.Why == reducer.ReasonApproval && h.Cause != reducer.CauseApproval,
		(h.Why == reducer.ReasonWake || h.Why == reducer.ReasonFault || h.Why == reducer.ReasonShow) && h.Status != reducer.Suspended,
		h.Why == reducer.ReasonTimer && h.Cause != reducer.CauseTimer,
		h.Why == reducer.ReasonCallback && h.Cause != reducer.CauseCallback,
		(h.Why == reducer.ReasonInbox || h.Why == reducer.ReasonSchedule || h.Why == reducer.ReasonReport ||
			h.Why == reducer.ReasonCascade) && h.Status != reducer.Idle:
		return corruptHead("%s with %s %q", h.Status, attrWhy, h.Why)
	}
	return nil
}
