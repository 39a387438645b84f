package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/internal/memtable"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/replay/report"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// Options tune a replay.
type Options struct {
	// RunReads runs the agent's read tools again (a read changes nothing
	// in the world) and compares their results with the recorded ones;
	// otherwise every tool answers with its recorded result.
	RunReads bool
	// Log receives the engine's logs; nil discards them.
	Log *slog.Logger
}

// maxInvocations bounds the invocations one replayed turn may take.
const maxInvocations = 200

// invocationTime is the deadline each replayed invocation runs under.
const invocationTime = 5 * time.Minute

// Run replays the recorded session exp against agents: the agent the
// session was created for, by its name. Each recorded turn's messages are
// posted and the turn is run as the resume function runs it, its model
// playing the recorded steps and its tools answering with the recorded
// results; a side effect never runs. A recorded approval's answer is given
// again to the replayed call at the same place; a call the recording ran
// without asking, that the agent now asks for, is approved (and the
// divergence reported). The report lists every divergence; the error is
// for an export that cannot be replayed, or a store that failed.
func Run(ctx context.Context, exp api.Export, agents turn.AgentMap, o Options) (report.Report, error) {
	rec, err := read(exp)
	if err != nil {
		return report.Report{}, err
	}
	rep := report.Report{Session: rec.session, Agent: rec.agent, Turns: []report.Turn{}, Divergences: []report.Divergence{}}
	agent, ok := agents.Agent(rec.agent)
	if !ok {
		rep.Divergences = append(rep.Divergences, report.Divergence{Kind: report.AgentGone,
			Detail: fmt.Sprintf("the session's agent %q is not defined", rec.agent)})
		return rep, nil
	}
	r, err := newReplayer(agent, o)
	if err != nil {
		return rep, err
	}
	if rec.steered > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d message(s) were steered into running turns; the replay posts them before the next turn", rec.steered))
	}
	if agent.Remote != nil {
		rep.Notes = append(rep.Notes, "the agent's remote (MCP) tools are not listed in a replay: calls of them replay as unknown tools")
	}
	if _, err := r.sessions.Create(ctx, rec.session, rec.owner, rec.agent); err != nil {
		return rep, fmt.Errorf("replay: create session %s: %w", rec.session, err)
	}
	for _, t := range rec.turns {
		got, err := r.turn(ctx, rec, t)
		if err != nil {
			return rep, fmt.Errorf("replay: turn %d (%s): %w", t.n, t.id, err)
		}
		rep.Turns = append(rep.Turns, report.Turn{Number: t.n, ID: t.id, Recorded: t.end, Replayed: got.end,
			RecordedSteps: len(t.steps), ReplayedSteps: len(got.steps), Changed: t.print != "" && t.print != turn.Fingerprint(agent)})
		rep.Divergences = append(rep.Divergences, compare(agent, t, got)...)
		rep.Notes = append(rep.Notes, got.notes...)
	}
	return rep, nil
}

// replayer is one replay's storage in memory, its runner and the agent it
// runs: the agent under test with the recording as its model and the
// recorded results as its tools'.
type replayer struct {
	clock    *clock.Shifted
	sessions *session.Store
	worker   *worker.Worker
	model    *recorded
	owner    string
}

func newReplayer(agent *turn.Agent, o Options) (*replayer, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clk := &clock.Shifted{}
	ss := session.New(memstore.NewLog(clk.Clock()), streams.New(memstore.NewBucket(clk.Clock()), "replay"))
	ss.Waker = memstore.NewWakes(clk.Clock())
	ss.Now = clk.Clock()
	ss.Log = log
	m := &recorded{}
	a := *agent
	a.Model = m
	// Sub-agents and remote tools are not run: the calls answer with
	// their recorded results, or as unknown tools.
	var none turn.Children
	a.Children, a.Remote = none, nil
	if agent.Tools != nil {
		var ts []tool.Tool
		for _, t := range agent.Tools.Tools() {
			ts = append(ts, wrap(t, m, o.RunReads))
		}
		reg, err := tool.NewRegistry(ts...)
		if err != nil {
			return nil, fmt.Errorf("replay: agent %s: %w", agent.Name, err)
		}
		a.Tools = reg
	}
	agents := turn.AgentMap{a.Name: &a}
	ss.Steering = agents.Steering
	ss.CheckInput = agents.CheckInput
	broker := claimsdb.New(memtable.New(), "replay")
	broker.Fate = turn.GrantFate(ss)
	ss.Claims = broker
	runner := &turn.Runner{Sessions: ss, Agents: agents, Waker: ss.Waker, Log: log, Claims: broker, Build: "replay"}
	return &replayer{clock: clk, sessions: ss, worker: &worker.Worker{Sessions: ss, Runner: runner, Log: log}, model: m}, nil
}

// wrap is tool t as a replay runs it: its schema, effect, rules and claims
// as they are, its run answering with the recorded result of the call at
// the same place (or, for a read with runReads, running it). It completes
// at once, never by callback.
func wrap(t tool.Tool, m *recorded, runReads bool) tool.Tool {
	run, read := t.Run, !t.SideEffect()
	t.Callback, t.Timeout, t.Retry = nil, 0, tool.Retry{}
	t.Run = func(ctx context.Context, c tool.Call) (json.RawMessage, error) {
		if runReads && read {
			return run(ctx, c)
		}
		m.mu.Lock()
		rt := m.turn
		m.mu.Unlock()
		if rt == nil {
			return nil, errors.New("replay: no recorded turn is playing")
		}
		p, ok := resultOf(rt, position(c.Turn, c.ID))
		switch {
		case !ok || p.Type == parts.ToolOutputDenied:
			return nil, fmt.Errorf("replay: the recording has no result for call %s of %s", c.ID, c.Name)
		case p.Type == parts.ToolOutputError:
			return nil, errors.New(p.ErrorText)
		}
		return p.Output, nil
	}
	return t
}

// newTurn is what a replayed turn did.
type newTurn struct {
	id, end string
	failure *reducer.Failure
	steps   []*conversation.Step
	results map[string]parts.Part
	asked   map[string]reducer.Approval
	grants  map[string][]json.RawMessage
	guards  []string
	// notes say what the replay could not replay.
	notes []string
}

// turn posts recorded turn t's messages and runs the turn until it ends or
// waits for what the recording does not give.
func (r *replayer) turn(ctx context.Context, rec *recording, t *recTurn) (*newTurn, error) {
	r.model.play(t)
	owner := reducer.Actor{Kind: reducer.ActorOperator, ID: rec.owner}
	for _, m := range t.msgs {
		if _, err := r.sessions.Post(ctx, rec.session, owner, m.Text); err != nil {
			return nil, fmt.Errorf("post message %s: %w", m.ID, err)
		}
	}
	got := &newTurn{end: "open"}
	raises := t.raises
	for range maxInvocations {
		ictx, cancel := context.WithTimeout(ctx, invocationTime)
		_, err := r.worker.Handle(ictx, wake.Wake{Session: rec.session, Reason: "replay"})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		sess, err := r.sessions.Load(ctx, rec.session)
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		st := sess.State
		if got.id == "" {
			if got.id, err = r.nth(ctx, rec.session, t.n); err != nil {
				return nil, err
			}
		}
		if got.id == "" || st.Turn == nil || st.Turn.ID != got.id {
			break // the turn ended (or never started)
		}
		tr := st.Turn
		switch {
		case len(tr.Pending) > 0:
			stop, err := r.answer(ctx, rec, t, got, tr.Pending)
			if err != nil {
				return nil, err
			}
			if stop {
				return r.stop(ctx, rec, t, got)
			}
		case tr.Cause == reducer.CauseTimer || tr.Cause.Known() && !tr.Wake.IsZero():
			r.clock.Pass(tr.Wake)
		case tr.Cause == reducer.CauseLimit && len(raises) > 0:
			if err := r.sessions.Raise(ctx, rec.session, owner, raises[0]); err != nil {
				return nil, fmt.Errorf("raise: %w", err)
			}
			raises = raises[1:]
		case tr.Cause == reducer.CauseBudget || tr.Cause == reducer.CauseLease:
			// The next invocation resumes it.
		case st.Status == reducer.Running && !tr.Lease.IsZero():
			r.clock.Pass(tr.Lease)
		default:
			if tr.Cause != reducer.CauseLimit {
				got.notes = append(got.notes, fmt.Sprintf("turn %d: the replay stopped where the turn waits (%s), which it does not replay", t.n, tr.Cause))
			}
			return r.stop(ctx, rec, t, got)
		}
	}
	return r.stop(ctx, rec, t, got)
}

// stop ends the replay of turn t where it waits for what the recording
// does not give (an answer it never got, an operator's raise): when the
// recorded turn ended (cancelled there, or ended by a message), the
// replayed one is cancelled, so that the next turn can start; when the
// recording left it open too, it is left waiting.
func (r *replayer) stop(ctx context.Context, rec *recording, t *recTurn, got *newTurn) (*newTurn, error) {
	sess, err := r.sessions.Load(ctx, rec.session)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if open := sess.State.Turn; open != nil && open.ID == got.id && t.end != "open" {
		owner := reducer.Actor{Kind: reducer.ActorOperator, ID: rec.owner}
		if err := r.sessions.Cancel(ctx, rec.session, owner, "replay: the recorded turn ended here ("+t.end+")"); err != nil {
			return nil, fmt.Errorf("cancel: %w", err)
		}
	}
	return r.collect(ctx, rec.session, got)
}

// nth is the id of the session's nth turn, "" when it has not started.
func (r *replayer) nth(ctx context.Context, id string, n int) (string, error) {
	facts, err := r.sessions.Facts(ctx, id, 0)
	if err != nil {
		return "", fmt.Errorf("facts: %w", err)
	}
	for _, f := range facts {
		if f.Type == reducer.TurnStarted {
			if n--; n == 0 {
				return f.Turn, nil
			}
		}
	}
	return "", nil
}

// answer answers the replayed turn's pending approvals as the recording
// answered the calls at their places; stop is set when the recording gave
// no answer to one it asked about (it was exported while waiting).
func (r *replayer) answer(ctx context.Context, rec *recording, t *recTurn, got *newTurn, pending []reducer.Approval) (stop bool, err error) {
	for _, ap := range pending {
		pos := position(got.id, ap.ToolCallID)
		a, answered := t.answers[pos]
		_, asked := t.asked[pos]
		switch {
		case answered:
			// As the operator who answered (or the owner, for the tick's
			// denial of an expired request).
			by := a.By
			if by == "" || a.ByKind != reducer.ActorOperator {
				by = rec.owner
			}
			kind := reducer.ActorOperator
			ans := reducer.Answer{ApprovalID: ap.ID, ToolCallID: ap.ToolCallID, Decision: a.Decision, Reason: a.Reason, Input: a.Input, Output: a.Output}
			err := r.sessions.Answer(ctx, rec.session, reducer.Actor{Kind: kind, ID: by}, ans)
			if errors.Is(err, reducer.ErrBadAnswer) && a.Decision == reducer.Edit {
				// The edit the recording made is refused now: deny it, as
				// the call cannot run with it (compare reports it).
				got.notes = append(got.notes, fmt.Sprintf("turn %d: the recorded edit of call %s is refused now: %v", t.n, ap.ToolCallID, err))
				ans = reducer.Answer{ApprovalID: ap.ID, ToolCallID: ap.ToolCallID, Decision: reducer.Deny, Reason: "replay: the recorded edit is refused"}
				err = r.sessions.Answer(ctx, rec.session, reducer.Actor{Kind: kind, ID: by}, ans)
			}
			if err != nil {
				return false, fmt.Errorf("answer %s: %w", ap.ID, err)
			}
		case asked:
			return true, nil
		default:
			ans := reducer.Answer{ApprovalID: ap.ID, ToolCallID: ap.ToolCallID, Decision: reducer.Approve, Reason: "replay: the recording went on without asking"}
			if err := r.sessions.Answer(ctx, rec.session, reducer.Actor{Kind: reducer.ActorOperator, ID: rec.owner}, ans); err != nil {
				return false, fmt.Errorf("answer %s: %w", ap.ID, err)
			}
		}
	}
	return false, nil
}

// collect reads what the replayed turn did from the session's facts and
// its stream.
func (r *replayer) collect(ctx context.Context, id string, got *newTurn) (*newTurn, error) {
	facts, err := r.sessions.Facts(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("facts: %w", err)
	}
	got.results, got.asked, got.grants = map[string]parts.Part{}, map[string]reducer.Approval{}, map[string][]json.RawMessage{}
	var stream string
	for _, f := range facts {
		switch {
		case f.Type == reducer.TurnStarted && f.Turn == got.id:
			stream = f.Stream
		case f.Type == reducer.ApprovalRequested && f.Approval != nil:
			got.asked[position(got.id, f.Approval.ToolCallID)] = *f.Approval
		case f.Type == reducer.GuardDecided && f.Turn == got.id && f.Guard != nil:
			got.guards = append(got.guards, decision(f))
		case f.Type == reducer.ClaimGranted && f.Grant != nil && f.Grant.Turn == got.id:
			for _, c := range f.Grant.Claims {
				b, _ := json.Marshal(c)
				got.grants[position(got.id, f.Grant.ToolCall)] = append(got.grants[position(got.id, f.Grant.ToolCall)], b)
			}
		case f.Ends() && f.Turn == got.id:
			got.end, got.failure = endOf(f.Type), f.Failure
		}
	}
	if stream == "" {
		return got, nil
	}
	var ps []parts.Part
	for cursor := streams.Cursor(""); ; {
		page, err := r.sessions.ReadStream(ctx, id, stream, cursor)
		if err != nil {
			return nil, fmt.Errorf("read stream %s: %w", stream, err)
		}
		for _, e := range page.Entries {
			ps = append(ps, e.Part)
		}
		if !page.More || page.Cursor == cursor {
			break
		}
		cursor = page.Cursor
	}
	got.steps = conversation.Replay(ps).Steps
	for _, p := range ps {
		if p.Type == parts.ToolOutputAvailable || p.Type == parts.ToolOutputError || p.Type == parts.ToolOutputDenied {
			got.results[position(got.id, p.ToolCallID)] = p
		}
	}
	return got, nil
}
