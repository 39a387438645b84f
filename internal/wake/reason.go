package wake

import (
	"context"
	"log/slog"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// Reason says why a wake was sent. It is informational, for logs: the
// worker decides from the session's facts (reducer.State.Next), never from
// the reason. On the wire it is the message body's "reason" string.
type Reason string

// Reasons for a wake.
const (
	// A turn suspended for a cause that needs no operator; see ForCause.
	Budget           Reason = Reason(reducer.CauseBudget)
	Throttled        Reason = Reason(reducer.CauseThrottled)
	ModelUnavailable Reason = Reason(reducer.CauseModelUnavailable)
	Lease            Reason = Reason(reducer.CauseLease)    // the tick reaped a turn past its lease
	Message          Reason = "message"                     // a message was posted
	Approval         Reason = "approval"                    // the last pending approval was answered or expired
	Verdict          Reason = "verdict"                     // an uncertain execution was settled
	Raised           Reason = "raised"                      // an operator raised the spend caps of a turn at a limit
	Cancelled        Reason = "cancelled"                   // a turn was cancelled; queued messages may wait
	Inbox            Reason = "inbox"                       // messages wait after a run; a fresh invocation takes them
	Rewake           Reason = "rewake"                      // the tick re-sends a wake taken as lost
	Rewound          Reason = "rewound"                     // a rewind or fork left messages to answer
	Released         Reason = "released"                    // claims a blocked turn waits for were released (or a waiter ahead withdrew)
	Timer            Reason = Reason(reducer.CauseTimer)    // a timer's end, as wait_until or an operator set it
	Callback         Reason = Reason(reducer.CauseCallback) // a tool call's callback ended
	Pinned           Reason = "pinned"                      // a turn handed to the build it is pinned to (turn.Pins)
)

// ForCause is the reason for the wake that follows a suspension for c.
func ForCause(c reducer.Cause) Reason { return Reason(c) }

// Notify sends wk through w, if w is set, logging a failure rather than
// returning it: the caller's fact is durable, and the tick re-sends a wake
// that was lost (see reducer.Need.Lost).
func Notify(ctx context.Context, w Waker, log *slog.Logger, wk Wake, delay time.Duration) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if w == nil {
		log.DebugContext(ctx, "no waker is set; the tick will send the wake", "session", wk.Session, "reason", wk.Reason)
		return
	}
	if err := w.Wake(ctx, wk, delay); err != nil {
		log.WarnContext(ctx, "wake not sent; the tick will re-send it", "session", wk.Session, "reason", wk.Reason, "err", err)
	}
}
