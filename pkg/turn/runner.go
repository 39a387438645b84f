package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// Errors for a Start or Resume that did not run.
var (
	// ErrNotIdle: Start found a turn already open, or nothing to answer.
	ErrNotIdle = errors.New("turn: session is not idle with a message to answer")
	// ErrNotResumable: Resume found no turn ready to continue.
	ErrNotResumable = errors.New("turn: no turn ready to resume")
	// ErrLost: another invocation won the compare-and-set.
	ErrLost = errors.New("turn: lost the race")
	// ErrUnknownAgent: the session names an agent this runner lacks.
	ErrUnknownAgent = errors.New("turn: unknown agent")
)

// Runner runs turns. Its fields are set once; a Runner is safe for
// concurrent use and keeps nothing between calls.
type Runner struct {
	Sessions *session.Store
	Agents   Agents
	Waker    wake.Waker
	Log      *slog.Logger
	// Interceptors wrap the runner's model calls, tool calls and steps,
	// the first outermost (see package intercept). Their store decorators
	// (Facts, Streams) are not applied here: Sessions is the store as
	// wired, decorated by intercept.Store.
	Interceptors []intercept.Interceptor
	// Claims is the resource claims broker the tools that declare claims
	// ask before they run (see claims.go; *claimsdb.Broker in a deployment);
	// nil when no tool does.
	Claims claims.Broker
	// CallbackURL is the operator API's public URL, under which the
	// tools that complete by callback get their URLs
	// (/callbacks/{token}); empty hands out tokens without URLs.
	CallbackURL string
	// Build names the code each invocation records with the agent's
	// fingerprint (version.go): the Lambda function's version in a
	// deployment; empty records "local".
	Build string
	// Pins hands a turn whose agent's policy is pin to the build it
	// started on, when that is not this one (onchange.go); nil can hand
	// none over, as if every other build were gone.
	Pins Pins
}

// Start opens a turn answering the session's waiting messages and runs it.
// Only one of any number of concurrent Starts wins; the others return
// ErrLost and change nothing.
func (r *Runner) Start(ctx context.Context, id string) (Outcome, error) {
	sess, err := r.Sessions.Load(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	return r.StartLoaded(ctx, sess)
}

// StartLoaded is Start for a session the caller has just loaded. A stale
// session only makes the compare-and-set fail.
func (r *Runner) StartLoaded(ctx context.Context, sess *session.Session) (Outcome, error) {
	id := sess.ID
	st := sess.State
	if st.Status != reducer.Idle || len(st.Inbox) == 0 {
		return Outcome{}, fmt.Errorf("turn: start %s (status %s, %d waiting): %w", id, st.Status, len(st.Inbox), ErrNotIdle)
	}
	agent, ok := r.Agents.Agent(st.Agent)
	if !ok {
		return Outcome{}, fmt.Errorf("turn: start %s: agent %q: %w", id, st.Agent, ErrUnknownAgent)
	}
	lim := agent.Limits.WithDefaults()
	deadline := deadlineOf(ctx, r.Sessions.Clock(), lim.Budget)
	turnID := ids.New("turn")
	trace, minted := startTrace(ctx, st.Inbox)
	// A stream exists from its first chunk, so a losing Start leaves nothing
	// behind: its Close writes nothing.
	sink := r.Sessions.OpenStream(id, turnID)
	next, err := r.Sessions.Append(ctx, id, st, reducer.Fact{
		Type: reducer.TurnStarted, Actor: agentActor(turnID), Turn: turnID, Stream: turnID,
		Lease: deadline.Add(lim.LeaseGrace), Trace: trace, Version: r.version(agent),
	})
	if err != nil {
		if cerr := sink.Close(ctx, streams.Aborted); cerr != nil {
			r.log().WarnContext(ctx, "close losing stream", "session", id, "err", cerr)
		}
		if session.LostRace(err) {
			return Outcome{}, fmt.Errorf("turn: start %s: %w", id, ErrLost)
		}
		return Outcome{}, err
	}
	sess.State = next
	ru := newRun(&core{r: r, sess: sess, agent: agent, lim: lim, sink: sink, deadline: deadline,
		out: Outcome{Session: id, Turn: turnID}, trace: trace, traceRoot: minted})
	ru.intercept()
	return ru.invocation(ctx, false, func(ctx context.Context) (Outcome, error) {
		ru.emit(parts.Part{Type: parts.Start, MessageID: turnID})
		return ru.finish(ru.loop(ctx))
	})
}

// Resume continues a suspended turn whose wait is over, or takes over a
// running turn whose invocation's lease ran out. Only one of any number of
// concurrent Resumes wins; the others return ErrLost and change nothing.
func (r *Runner) Resume(ctx context.Context, id string) (Outcome, error) {
	sess, err := r.Sessions.Load(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	return r.ResumeLoaded(ctx, sess, sess.State.Next(r.Sessions.Clock(), 0))
}

// ResumeLoaded is Resume for a session the caller has just loaded and
// decided on: need is its state's Next (grace 0), which the caller read once
// (a wake is decided once, by the worker). A stale session only makes the
// compare-and-set fail.
func (r *Runner) ResumeLoaded(ctx context.Context, sess *session.Session, need reducer.Need) (Outcome, error) {
	id := sess.ID
	st := sess.State
	t := st.Turn
	// A turn may be resumed when its wait is over, or taken over when its
	// invocation died (what the tick would reap): see reducer.State.Next.
	if t == nil || (need.Action != reducer.Resume && need.Action != reducer.Reap) {
		return Outcome{}, fmt.Errorf("turn: resume %s (status %s, waiting for %q, due %s): %w",
			id, st.Status, need.Reason, need.Due.Format(time.RFC3339), ErrNotResumable)
	}
	agent, ok := r.Agents.Agent(st.Agent)
	if !ok {
		return Outcome{}, fmt.Errorf("turn: resume %s: agent %q: %w", id, st.Agent, ErrUnknownAgent)
	}
	v := r.version(agent)
	ch := decideChange(t, agent, v)
	if ch.pin != "" {
		handed, err := r.handOff(ctx, id, st, &ch, v)
		if err != nil || handed {
			return Outcome{Session: id, Turn: t.ID, Kind: Handed, Build: ch.pin}, err
		}
	}
	lim := agent.Limits.WithDefaults()
	deadline := deadlineOf(ctx, r.Sessions.Clock(), lim.Budget)
	next, err := r.Sessions.Append(ctx, id, st, reducer.Fact{
		Type: reducer.TurnResumed, Actor: agentActor(t.ID), Turn: t.ID, Lease: deadline.Add(lim.LeaseGrace),
		Version: v,
	})
	if err != nil {
		if session.LostRace(err) {
			return Outcome{}, fmt.Errorf("turn: resume %s: %w", id, ErrLost)
		}
		return Outcome{}, err
	}
	sess.State = next
	sink, prior, err := r.Sessions.ResumeStream(ctx, id, t.Stream)
	if err != nil {
		return Outcome{}, fmt.Errorf("turn: resume %s: %w", id, err)
	}
	ru := newRun(&core{r: r, sess: sess, agent: agent, lim: lim, sink: sink, parts: prior, deadline: deadline,
		out: Outcome{Session: id, Turn: t.ID}, trace: resumeTrace(ctx, t.Trace), change: &ch})
	ru.intercept()
	return ru.invocation(ctx, true, func(ctx context.Context) (Outcome, error) { return ru.resumed(ctx, prior, next) })
}

// resumed is the rest of a resume once its turn.resumed fact stands.
func (ru *run) resumed(ctx context.Context, prior []parts.Part, next reducer.State) (Outcome, error) {
	lim := ru.lim
	ru.rep.Add(prior...)
	ru.replay()
	if status := ru.sink.Closed(); status != streams.Open {
		// The last invocation closed the stream and died before recording
		// the outcome: record it now.
		return ru.finish(ru.end.finishClosed(ctx, status))
	}
	if ru.turn.Abandoned {
		ru.emit(parts.Part{Type: parts.DataAbandoned, Data: json.RawMessage(`{"reason":"the invocation ended mid-step; the step is redone"}`)})
	}
	if p, ok := redone(prior); ok {
		ru.emit(p)
	}
	ru.emit(parts.Part{Type: parts.DataResumed, Data: json.RawMessage(fmt.Sprintf(`{"invocation":%d}`, next.Turn.Invocations))})
	if c := ru.change; c != nil && c.fail != nil {
		return ru.finish(ru.end.fail(ctx, reducer.FailChanged, c.fail))
	}
	if n := next.Turn.Invocations; n > lim.MaxInvocationsPerTurn {
		return ru.finish(ru.end.fail(ctx, reducer.FailLimit, fmt.Errorf("the turn was resumed %d times without finishing (cap %d)", n-1, lim.MaxInvocationsPerTurn)))
	}
	return ru.finish(ru.loop(ctx))
}

// deadlineOf is when an invocation that starts at now (the store's clock)
// must be done: after budget, or sooner when ctx's deadline, which is on
// the wall clock, leaves less time than that.
func deadlineOf(ctx context.Context, now time.Time, budget time.Duration) time.Time {
	if cd, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(cd))
	}
	return now.Add(budget)
}
