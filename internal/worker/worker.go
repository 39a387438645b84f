package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/traceparent"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// Defaults for the Worker's optional fields.
const (
	// MaxBackoff is the longest a failed wake given back waits before it
	// is delivered again (see Worker.GiveBack).
	MaxBackoff = 5 * time.Minute
	// DefaultReserve is the least time left before the invocation's deadline
	// for Handle to start another turn after the one it ran.
	DefaultReserve = 30 * time.Second
	// maxRuns caps the runs of one Handle call, whatever the deadline.
	maxRuns = 16
)

// Why a wake was dropped (the metrics' Reason of WakesDropped).
const (
	DropInvalid        = "invalid"         // the record's body is not a wake
	DropUnknownSession = "unknown-session" // the session does not exist
	DropUnknownAgent   = "unknown-agent"   // the session's agent is not deployed
)

// Worker handles wakes. Its fields are set once; a Worker is safe for
// concurrent use and keeps nothing between calls.
type Worker struct {
	Sessions *session.Store
	Runner   *turn.Runner
	Log      *slog.Logger
	// Concurrency bounds the sessions of one batch handled at once; 0
	// handles them all at once: the worker is as wide as its batch, each
	// wake under the invocation's deadline.
	Concurrency int
	// GiveBack, when set, makes a record the batch reports failed visible
	// again after a backoff (at once for a wake the invocation ran out of
	// time for; else 1 s, doubling with each receive, at most MaxBackoff),
	// instead of after the queue's visibility timeout. wake.SQS.GiveBack
	// is one; an error is logged, and the record waits out the timeout.
	GiveBack func(ctx context.Context, receiptHandle string, after time.Duration) error
	// Reserve is the least time that must be left before the context's
	// deadline to run again after a run; 0 means DefaultReserve.
	Reserve time.Duration
	// Metrics counts the wakes dropped and handed back for redelivery,
	// and times each wake's send to its resume; nil records nothing.
	Metrics *metrics.Recorder
}

// Result says what one Handle call ran.
type Result struct {
	// Runs counts the Starts and Resumes that ran a turn.
	Runs     int
	Outcomes []turn.Outcome
}

func (w *Worker) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.New(slog.DiscardHandler)
}

// decide reads what the session needs from its reduced state alone: start
// a turn, resume one (including taking over a turn whose invocation died
// past its lease, which the tick would reap), report a child's end, cancel
// an ended turn's orphaned children, or nothing. The worker is
// handling the session's wake, so no wake is ever lost to it (grace 0).
// It is the wake's one decision: need goes on to the runner, which does not
// ask again.
func decide(st reducer.State, now time.Time) (reducer.Action, reducer.Need) {
	need := st.Next(now, 0)
	switch a := need.Action; a {
	case reducer.Start, reducer.Resume, reducer.Report, reducer.Cascade, reducer.Show:
		return a, need
	case reducer.Reap:
		return reducer.Resume, need
	}
	return reducer.None, need
}

// Handle looks at the session wk names and runs what its facts call for:
// idle with waiting messages, a new turn; suspended with nothing pending
// (a fault suspension only once its delayed wake is due), or running past
// its lease, the open turn; a child session's ended turn, its report to
// the parent; an ended turn's children left running, their cancel
// (session.Store.Cascade). Anything else — and a wake that
// arrives late, twice, or after someone else acted — changes nothing. After
// a run that leaves messages waiting, Handle starts the next turn too while
// the context's deadline leaves at least Reserve; otherwise it sends a wake
// for them.
//
// An error means the wake should be retried: the session could not be read
// or the run failed in a way a later attempt may not. A wake for an unknown
// session, or a session whose agent this runner lacks, can never succeed: it
// is logged and Handle returns no error.
func (w *Worker) Handle(ctx context.Context, wk wake.Wake) (Result, error) {
	var res Result
	log := w.log().With("session", wk.Session, "reason", wk.Reason, "seq", wk.Seq)
	if wk.Trace != "" {
		// A turn the wake starts, with no traced message, is traced
		// under the wake's trace (see turn.Runner.StartLoaded).
		ctx = traceparent.With(ctx, wk.Trace)
	}
	for {
		sess, err := w.Sessions.Load(ctx, wk.Session)
		if err == nil {
			err = ctx.Err()
		}
		switch {
		case errors.Is(err, session.ErrNotFound):
			log.WarnContext(ctx, "wake for a session that does not exist; dropped")
			w.Metrics.WakeDropped(DropUnknownSession)
			return res, nil
		case err != nil && res.Runs > 0:
			// The wake did its work; the tick finds anything left over.
			log.WarnContext(ctx, "could not look again after the run", "err", err)
			return res, nil
		case err != nil:
			return res, w.failed(ctx, log, wk.Session, fmt.Errorf("worker: wake for %s: %w", wk.Session, err))
		}
		act, need := decide(sess.State, w.Sessions.Clock())
		if chore, err := w.chore(ctx, wk.Session, act); chore {
			if err != nil {
				return res, w.failed(ctx, log, wk.Session, err)
			}
			continue
		}
		if res.Runs > 0 && act == reducer.Resume {
			// After a run of ours the turn suspended for its budget or a
			// throttled model, and the runner sent the wake for its next
			// invocation; or another writer acted and sent its own.
			act = reducer.None
		}
		if act == reducer.None {
			if res.Runs == 0 {
				log.DebugContext(ctx, "nothing to do", "status", sess.State.Status)
			}
			return res, nil
		}
		if res.Runs > 0 && (res.Runs >= maxRuns || !w.timeLeft(ctx)) {
			// Messages arrived while the turn ran, and their wake found it
			// running. Hand them to a fresh invocation.
			wake.Notify(ctx, w.Runner.Waker, log, wake.Wake{Session: wk.Session, Reason: wake.Inbox, Seq: sess.State.LastSeq}, 0)
			return res, nil
		}
		var out turn.Outcome
		if act == reducer.Start {
			out, err = w.Runner.StartLoaded(ctx, sess)
		} else {
			out, err = w.Runner.ResumeLoaded(ctx, sess, need)
		}
		switch {
		case errors.Is(err, turn.ErrLost), errors.Is(err, turn.ErrNotIdle), errors.Is(err, turn.ErrNotResumable):
			log.DebugContext(ctx, "someone else acted", "action", act.String(), "err", err)
			return res, nil
		case errors.Is(err, turn.ErrUnknownAgent):
			log.ErrorContext(ctx, "the session's agent is not deployed; wake dropped", "agent", sess.State.Agent, "err", err)
			w.Metrics.WakeDropped(DropUnknownAgent)
			return res, nil
		case err != nil:
			return res, w.failed(ctx, log, wk.Session, fmt.Errorf("worker: %s %s: %w", act, wk.Session, err))
		}
		res.Runs++
		res.Outcomes = append(res.Outcomes, out)
		log.InfoContext(ctx, "turn ran", "action", act.String(), "turn", out.Turn, "kind", out.Kind,
			"cause", out.Cause, "steps", out.Steps)
		if out.Kind == turn.Suspended || (out.Kind != turn.Superseded && out.Waiting == 0) {
			// A suspended turn has its own wake coming; and no message
			// waited when this run last wrote (one that came later brings
			// its own wake). After a superseded run, look again.
			return res, nil
		}
	}
}

// failed is the error a wake for session id that failed with err returns,
// for SQS to deliver it again: err, unless the session was deleted
// meanwhile (its head is gone, read consistently: the delete buries it
// before it purges the facts a load reads, so a wake handled during the
// purge may load it and fail to write, as a child's report does). A wake
// for a deleted session is dropped like one for a session that never
// existed: no retry can succeed.
func (w *Worker) failed(ctx context.Context, log *slog.Logger, id string, err error) error {
	if _, herr := w.Sessions.Head(ctx, id); !errors.Is(herr, dynamo.ErrNotFound) || ctx.Err() != nil {
		return err
	}
	log.WarnContext(ctx, "wake for a session deleted meanwhile; dropped", "err", err)
	w.Metrics.WakeDropped(DropUnknownSession)
	return nil
}

// chore does what a session needs besides a run of its turn, and reports
// whether act was such a chore: a child session's end to report to its
// parent, its approval requests to show its ancestors, or an ended turn's
// children to cancel.
func (w *Worker) chore(ctx context.Context, id string, act reducer.Action) (bool, error) {
	switch act {
	case reducer.Cascade:
		// The process that ended the turn died before it cancelled them.
		if err := w.Sessions.Cascade(ctx, id); err != nil {
			return true, fmt.Errorf("worker: cancel the orphaned children of %s: %w", id, err)
		}
		return true, nil
	case reducer.Show:
		// The child's invocation died before its ancestors showed its
		// approval requests.
		if err := w.Sessions.ShowPending(ctx, id); err != nil {
			return true, fmt.Errorf("worker: show the approval requests of %s: %w", id, err)
		}
		return true, nil
	case reducer.Report:
		if err := w.Runner.Report(ctx, id); err != nil {
			return true, fmt.Errorf("worker: report %s: %w", id, err)
		}
		return true, nil
	}
	return false, nil
}

// timeLeft reports whether the context leaves room for another run.
func (w *Worker) timeLeft(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return true
	}
	reserve := w.Reserve
	if reserve <= 0 {
		reserve = DefaultReserve
	}
	return time.Until(dl) > reserve
}
