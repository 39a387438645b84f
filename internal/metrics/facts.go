package metrics

import (
	"context"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// facts is a fact log that records the facts appended through it, once
// they are durable.
type facts struct {
	session.FactLog
	r *Recorder
}

func (f facts) Append(ctx context.Context, id string, next reducer.State, fs ...reducer.Fact) error {
	err := f.FactLog.Append(ctx, id, next, fs...)
	if err == nil {
		f.r.Facts(ctx, next, fs)
	}
	return err
}

func (f facts) AppendWithReceipt(ctx context.Context, id string, next reducer.State, rc *dynamo.Receipt, fs ...reducer.Fact) error {
	err := f.FactLog.AppendWithReceipt(ctx, id, next, rc, fs...)
	if err == nil {
		f.r.Facts(ctx, next, fs)
	}
	return err
}

// Facts records facts appended to a session, next being its state after
// them: turns started, completed and resumed (with the wake's time to the
// resume, when ctx carries its send time: WithWakeSent), suspensions by
// cause, failures by kind, and approvals answered with their wait.
func (r *Recorder) Facts(ctx context.Context, next reducer.State, fs []reducer.Fact) {
	if r == nil {
		return
	}
	agent := next.Agent
	for _, f := range fs {
		switch f.Type {
		case reducer.TurnStarted:
			r.emit(agent, "", Value{TurnsStarted, 1})
		case reducer.TurnCompleted:
			r.emit(agent, "", Value{TurnsCompleted, 1})
		case reducer.TurnResumed:
			vals := []Value{{Resumes, 1}}
			if sent, ok := wakeSent(ctx); ok {
				vals = append(vals, Value{WakeToResume, ms(r.now().Sub(sent))})
			}
			r.emit(agent, "", vals...)
		case reducer.TurnSuspended:
			r.emit(agent, string(f.Cause), Value{Suspensions, 1})
		case reducer.TurnFailed:
			kind := ""
			if f.Failure != nil {
				kind = string(f.Failure.Kind)
			}
			r.emit(agent, kind, Value{Failures, 1})
		case reducer.ApprovalAnswered:
			r.answered(agent, next, f)
		}
	}
}

// answered records an approval.answered fact, with its wait when the
// state knows when the approval was requested.
func (r *Recorder) answered(agent string, next reducer.State, f reducer.Fact) {
	if f.Answer == nil {
		return
	}
	vals := []Value{{ApprovalsAnswered, 1}}
	if t := next.Turn; t != nil {
		for _, a := range t.Answers {
			if a.ApprovalID == f.Answer.ApprovalID && !a.Requested.IsZero() {
				vals = append(vals, Value{ApprovalWait, ms(f.Time.Sub(a.Requested))})
			}
		}
	}
	r.emit(agent, string(f.Answer.Decision), vals...)
}

// wakeSentKey is the context key of a wake's send time.
type wakeSentKey struct{}

// WithWakeSent returns ctx carrying when the wake being handled was sent
// (its SQS SentTimestamp), for WakeToResume.
func WithWakeSent(ctx context.Context, sent time.Time) context.Context {
	return context.WithValue(ctx, wakeSentKey{}, sent)
}

func wakeSent(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(wakeSentKey{}).(time.Time)
	return t, ok && !t.IsZero()
}

// Tick records a tick run's report: turns reaped, approvals expired,
// wakes re-sent and sessions it failed to handle.
func (r *Recorder) Tick(reaped, expired, rewoken, errors int) {
	r.emit("", "", Value{Reaps, float64(reaped)}, Value{ApprovalsExpired, float64(expired)},
		Value{Rewakes, float64(rewoken)}, Value{TickErrors, float64(errors)})
}

// WakeDropped records an SQS record the worker dropped, and why.
func (r *Recorder) WakeDropped(reason string) { r.emit("", reason, Value{WakesDropped, 1}) }

// WakesRetried records n records handed back to SQS for redelivery.
func (r *Recorder) WakesRetried(n int) {
	if n > 0 {
		r.emit("", "", Value{WakesRetried, float64(n)})
	}
}
