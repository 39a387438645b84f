package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/retry"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// How an invocation ends (ending): a suspension with its wake, a
// completed or failed turn recorded with its snapshot, or a stop after a
// write that lost its race or failed.

// ending is how an invocation ends: suspended, completed, failed, or
// stopped after a failed write; a child's ended turn is reported to its
// parent through the children.
type ending struct {
	*core
	parent reporter
}

// ender is the port through which a collaborator ends the invocation (an
// ending).
type ender interface {
	suspend(ctx context.Context, cause reducer.Cause, delay time.Duration, extra ...reducer.Fact) (Outcome, error)
	suspendForApproval(ctx context.Context, approvals []reducer.Approval, extra ...reducer.Fact) (Outcome, error)
	suspendFault(ctx context.Context, me *model.Error) (Outcome, error)
	suspendFor(ctx context.Context, cause reducer.Cause, retryAfter time.Duration, kind reducer.FailureKind, what string, err error) (Outcome, error)
	outOfTime(ctx context.Context, fault *model.Error) (Outcome, error)
	complete(ctx context.Context) (Outcome, error)
	fail(ctx context.Context, kind reducer.FailureKind, cause error) (Outcome, error)
	record(ctx context.Context, f reducer.Fact, kind Kind) (Outcome, error)
	stopped(ctx context.Context, err error) (Outcome, error)
}

// reporter is the port through which an ending reports a child session's
// ended turn to its parent (children).
type reporter interface {
	report(ctx context.Context)
}

// suspend checkpoints the turn with a suspension marker, records the
// suspension, and for a cause that needs no operator (not approval,
// uncertain or limit), sends the wake.
func (ru *ending) suspend(ctx context.Context, cause reducer.Cause, delay time.Duration, extra ...reducer.Fact) (Outcome, error) {
	ru.emit(parts.Part{Type: parts.DataSuspended, Data: mustJSON(map[string]string{"cause": string(cause)})})
	if err := ru.sink.Flush(ctx); err != nil {
		return ru.stopped(ctx, err)
	}
	last := reducer.Fact{Type: reducer.TurnSuspended}
	if n := len(extra); n > 0 && extra[n-1].Type == reducer.TurnSuspended {
		last, extra = extra[n-1], extra[:n-1]
	}
	last.Actor, last.Turn, last.Cause = agentActor(ru.out.Turn), ru.out.Turn, cause
	// The stream is durable up to here: its steps' usage counts now.
	u := ru.rep.Turn().Usage()
	last.Usage = &u
	facts := append(extra, last)
	if err := ru.append(ctx, facts...); err != nil {
		return ru.stopped(ctx, err)
	}
	next := ru.sess.State
	if cause == reducer.CauseCallback {
		delay = wakeDelay(next.Turn, ru.now())
	}
	ru.out.Kind, ru.out.Cause = Suspended, cause
	if cause != reducer.CauseApproval && cause != reducer.CauseUncertain && cause != reducer.CauseLimit {
		wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: ru.out.Session, Reason: wake.ForCause(cause), Seq: next.LastSeq, Trace: ru.trace}, delay)
	}
	return ru.out, nil
}

// suspendForApproval records extra, then the approvals requested, and
// suspends the turn for them.
func (ru *ending) suspendForApproval(ctx context.Context, approvals []reducer.Approval, extra ...reducer.Fact) (Outcome, error) {
	facts := slices.Clone(extra)
	for i := range approvals {
		facts = append(facts, reducer.Fact{Type: reducer.ApprovalRequested, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Approval: &approvals[i]})
	}
	out, err := ru.suspend(ctx, reducer.CauseApproval, 0, facts...)
	if err == nil && out.Kind == Suspended {
		ru.r.Sessions.ShowApprovals(ctx, ru.out.Session, ru.sess.State, approvals)
	}
	return out, err
}

// suspendFault suspends a turn whose model fault outlasted the step's
// tries or time, with a wake delayed by the agent's policy. The delay grows
// with each such suspension in a row (a completed step breaks the row);
// past the policy's Suspensions the turn fails instead.
func (ru *ending) suspendFault(ctx context.Context, me *model.Error) (Outcome, error) {
	cause := reducer.CauseModelUnavailable
	if me.Kind == model.Throttled {
		cause = reducer.CauseThrottled
	}
	return ru.suspendFor(ctx, cause, me.RetryAfter, reducer.FailModel, "the model stayed unavailable", me)
}

// suspendFor suspends the turn for a fault cause (reducer.Cause.Fault) as
// suspendFault does, or fails it as kind, saying what stayed unavailable.
func (ru *ending) suspendFor(ctx context.Context, cause reducer.Cause, retryAfter time.Duration, kind reducer.FailureKind, what string, err error) (Outcome, error) {
	p := ru.lim.ModelRetry
	n := 1
	if t := ru.sess.State.Turn; t != nil && ru.out.Steps == 0 {
		n = t.Faults + 1
	}
	if n > p.Suspensions {
		return ru.fail(ctx, kind, fmt.Errorf("%s through %d suspensions of the turn: %w", what, n-1, err))
	}
	delay := p.WakeAfter(n, retryAfter)
	ru.r.log().WarnContext(ctx, "fault outlasted the step; suspending the turn", "session", ru.out.Session, "turn", ru.out.Turn,
		"cause", cause, "suspension", n, "wake", delay, "err", err)
	return ru.suspend(ctx, cause, delay, reducer.Fact{Type: reducer.TurnSuspended, Faults: n, Wake: ru.now().Add(delay)})
}

// outOfTime suspends a turn this invocation has no time or steps left
// for: for its budget, or, when the step being redone had a transient
// fault, for the fault, which outlasted the step's time.
func (ru *ending) outOfTime(ctx context.Context, fault *model.Error) (Outcome, error) {
	if fault != nil && fault.Transient() {
		return ru.suspendFault(ctx, fault)
	}
	return ru.suspend(ctx, reducer.CauseBudget, 0)
}

// complete closes the stream, then records the outcome with a snapshot.
func (ru *ending) complete(ctx context.Context) (Outcome, error) {
	ru.emit(parts.Part{Type: parts.Finish, FinishReason: "stop"})
	if err := ru.sink.Close(ctx, streams.Completed); err != nil {
		return ru.stopped(ctx, err)
	}
	return ru.record(ctx, reducer.Fact{Type: reducer.TurnCompleted}, Completed)
}

// fail closes the stream with an error part and records the failure.
func (ru *ending) fail(ctx context.Context, kind reducer.FailureKind, cause error) (Outcome, error) {
	ru.emit(parts.Part{Type: parts.Error, ErrorText: cause.Error()}, parts.Part{Type: parts.Finish, FinishReason: "error"})
	if err := ru.sink.Close(ctx, streams.Failed); err != nil {
		return ru.stopped(ctx, err)
	}
	f := &reducer.Failure{Kind: kind, Error: cause.Error()}
	ru.out.Failure = f
	return ru.record(ctx, reducer.Fact{Type: reducer.TurnFailed, Failure: f}, Failed)
}

// finishClosed records the outcome of a turn whose stream an earlier
// invocation closed before it died.
func (ru *ending) finishClosed(ctx context.Context, status streams.Status) (Outcome, error) {
	switch status {
	case streams.Completed:
		return ru.record(ctx, reducer.Fact{Type: reducer.TurnCompleted}, Completed)
	case streams.Interrupted:
		return ru.record(ctx, reducer.Fact{Type: reducer.TurnInterrupted}, Interrupted)
	}
	f := &reducer.Failure{Kind: reducer.FailInternal, Error: "the stream was closed as " + string(status) + " before the outcome was recorded"}
	ru.out.Failure = f
	return ru.record(ctx, reducer.Fact{Type: reducer.TurnFailed, Failure: f}, Failed)
}

func (ru *ending) record(ctx context.Context, f reducer.Fact, kind Kind) (Outcome, error) {
	ru.replay()
	u := ru.turn.Usage()
	f.Actor, f.Turn, f.Usage = agentActor(ru.out.Turn), ru.out.Turn, &u
	err := ru.retry(ctx, func() error {
		_, err := ru.r.Sessions.End(ctx, ru.sess, ru.turn, f)
		return err
	})
	if err != nil {
		return ru.stopped(ctx, err)
	}
	ru.out.Kind, ru.out.Usage = kind, u
	ru.parent.report(ctx)
	return ru.out, nil
}

// stopped handles an error writing the stream or the facts. Losing a race
// means another invocation or an operator owns the turn now: stop quietly.
// A store fault that outlasted the SDK's retries (a throttle, a 5xx, a
// timeout) suspends the turn as throttled, if the facts can still be
// written. Anything else is returned; the reaper will find the turn.
func (ru *ending) stopped(ctx context.Context, err error) (Outcome, error) {
	if awsenv.Transient(err) && ctx.Err() == nil {
		out, serr := ru.shelve(ctx)
		if serr == nil {
			ru.r.log().WarnContext(ctx, "store fault: turn suspended", "session", ru.out.Session, "turn", ru.out.Turn, "err", err)
			return out, nil
		}
		if !session.LostRace(serr) {
			return ru.out, fmt.Errorf("turn %s of %s: %w (and suspending it: %w)", ru.out.Turn, ru.out.Session, err, serr)
		}
		err = serr
	}
	if errors.Is(err, streams.ErrChunkTaken) || errors.Is(err, streams.ErrPoisoned) || session.LostRace(err) {
		ru.r.log().InfoContext(ctx, "turn superseded", "session", ru.out.Session, "turn", ru.out.Turn, "err", err)
		ru.out.Kind = Superseded
		ru.recordUnwritten(ctx)
		if !errors.Is(err, streams.ErrChunkTaken) && !errors.Is(err, streams.ErrPoisoned) {
			ru.closeIfEnded(ctx)
		}
		return ru.out, nil
	}
	return ru.out, fmt.Errorf("turn %s of %s: %w", ru.out.Turn, ru.out.Session, err)
}

// closeIfEnded closes the stream when the turn was ended by someone else (a
// cancel) rather than taken over by another invocation, which owns the
// stream now and must not lose it.
func (ru *ending) closeIfEnded(ctx context.Context) {
	sess, err := ru.r.Sessions.Load(ctx, ru.out.Session)
	if err != nil || (sess.State.Turn != nil && sess.State.Turn.ID == ru.out.Turn) {
		return
	}
	if err := ru.r.Sessions.CloseStream(ctx, ru.sink, streams.Cancelled, "cancelled"); err != nil {
		ru.r.log().WarnContext(ctx, "close the stream of an ended turn", "session", ru.out.Session, "err", err)
	}
}

// recordUnwritten records, when the turn was ended under this invocation (a
// cancel), the usage of the billed steps it completed that the ending did
// not count: those the canceller could not read, since the stream was
// closed before this invocation wrote them (its chunk is then refused). A
// turn taken over by another invocation is left to it. Best effort: a
// failure is logged.
func (ru *ending) recordUnwritten(ctx context.Context) {
	ru.replay()
	mine := ru.turn.Usage()
	if mine.Steps == 0 || ctx.Err() != nil {
		return
	}
	id := ru.out.Session
	fs, err := ru.r.Sessions.Facts(ctx, id, ru.sess.State.LastSeq)
	if err != nil {
		ru.r.log().WarnContext(ctx, "read the facts of an ended turn", "session", id, "err", err)
		return
	}
	var ended *reducer.Fact
	for i := range fs {
		if fs[i].Ends() && fs[i].Turn == ru.out.Turn {
			ended = &fs[i]
		}
	}
	if ended == nil || ended.Usage == nil {
		return
	}
	lost := mine.Sub(*ended.Usage)
	if lost.Steps <= 0 || lost.InputTokens < 0 || lost.OutputTokens < 0 || lost.CostMicroUSD < 0 {
		return
	}
	f := reducer.Fact{Type: reducer.UsageRecorded, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Usage: &lost}
	err = retry.Do(ctx, ru.commitPolicy(), func() error {
		sess, err := ru.r.Sessions.Load(ctx, id)
		if err != nil {
			return err
		}
		_, err = ru.r.Sessions.Append(ctx, id, sess.State, f)
		return err
	}, func(err error) bool { return errors.Is(err, session.ErrConflict) })
	if err != nil {
		ru.r.log().WarnContext(ctx, "record the usage of steps the ended turn's stream lacks", "session", id, "turn", ru.out.Turn, "err", err)
		return
	}
	ru.r.log().InfoContext(ctx, "recorded the usage of steps the ended turn's stream lacks", "session", id, "turn", ru.out.Turn, "steps", lost.Steps)
}

// shelve suspends the turn as throttled after a store write failed, without
// writing the stream, which may be what failed: parts not yet durable are
// dropped, and a step they belonged to is redone on resume.
func (ru *ending) shelve(ctx context.Context) (Outcome, error) {
	if err := ru.append(ctx, reducer.Fact{Type: reducer.TurnSuspended, Actor: agentActor(ru.out.Turn),
		Turn: ru.out.Turn, Cause: reducer.CauseThrottled}); err != nil {
		return ru.out, err
	}
	ru.out.Kind, ru.out.Cause = Suspended, reducer.CauseThrottled
	wake.Notify(ctx, ru.r.Waker, ru.r.log(), wake.Wake{Session: ru.out.Session, Reason: wake.Throttled, Seq: ru.sess.State.LastSeq, Trace: ru.trace},
		ru.lim.ModelRetry.WakeDelay)
	return ru.out, nil
}
