package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/retry"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// The invocation's shared core: its state (core), the parts it emits and
// the facts it commits, the fence its reads pass (fenceReads), and the
// model request of its next step.

// core is one invocation's working state, which its collaborators share:
// the session and the turn's stream, the parts folded so far, the
// outcome being built, and the run's limits and time.
type core struct {
	r        *Runner
	sess     *session.Session
	agent    *Agent
	lim      Limits
	sink     *streams.Sink
	parts    []parts.Part          // the turn's durable parts plus this invocation's
	rep      conversation.Replayer // parts folded so far; see replay
	turn     conversation.Turn     // the turn as of the last replay
	deadline time.Time
	out      Outcome
	dirty    bool           // the sink holds parts beyond start, markers and the tools record
	billed   bool           // the sink may hold a completed step not yet written (see flushBilled)
	tools    *tool.Registry // the tools this invocation offers (see offer)
	hooks    hooks          // the interceptor chains (see intercept)
	timing   timing         // the tool runs and checkpoint since the last step, for the next's metadata
	trace    string         // the turn's traceparent (see startTrace)
	// traceRoot: this run minted trace, so its span is the root.
	traceRoot bool
	// change is what a resume decided about the definition it runs on
	// (onchange.go); nil for a start.
	change *change
	// files loads the bytes of the model input's files (nil until the
	// first step that has some; internal/files).
	files *files.Loader
}

// loadFiles sets the bytes of msgs' file blocks, read from the session
// store's files (Config.Files), just before a model call: the
// conversation holds only their references.
func (ru *core) loadFiles(ctx context.Context, msgs []conversation.Message) ([]conversation.Message, error) {
	if ru.files == nil {
		if !files.HasFiles(msgs) {
			return msgs, nil
		}
		if ru.r.Sessions.Files == nil {
			return nil, fmt.Errorf("turn %s: the conversation has files and the store keeps none", ru.out.Turn)
		}
		ru.files = ru.r.Sessions.Files.Loader(ru.out.Session)
	}
	return ru.files.Load(ctx, msgs)
}

// emit buffers parts in the sink and folds them into the run's view of the
// turn.
func (ru *core) emit(ps ...parts.Part) {
	for _, p := range ps {
		if p.Type != parts.Start && p.Type != DataTools && !p.Marker() {
			ru.dirty = true
		}
		if p.Type == parts.FinishStep {
			ru.billed = true
		}
	}
	ru.rep.Add(ps...)
	// Append fails only on a poisoned or closed sink; the next Flush or
	// Close reports that, so the error here adds nothing.
	_ = ru.sink.Append(ps...)
}

// replay brings the run's view of the turn up to the parts emitted so far.
// The parts are folded as they are emitted, so this costs nothing per part
// already seen.
func (ru *core) replay() { ru.turn = ru.rep.Turn() }

// finish adds what the session looked like at the invocation's last write.
func (ru *core) finish(out Outcome, err error) (Outcome, error) {
	out.Waiting = len(ru.sess.State.Inbox)
	return out, err
}

// append commits the run's facts; see retry.
func (ru *core) append(ctx context.Context, facts ...reducer.Fact) error {
	return ru.retry(ctx, func() error {
		next, err := ru.r.Sessions.Append(ctx, ru.out.Session, ru.sess.State, facts...)
		if err == nil {
			ru.sess.State = next
		}
		return err
	})
}

// retry runs a commit of the run's own facts. Losing the compare-and-set
// to a fact that leaves the turn in this invocation's hands — a message
// posted meanwhile — is no reason to stop: reload and commit again, within
// commitPolicy. If the turn was cancelled or taken over, the conflict stands.
func (ru *core) retry(ctx context.Context, commit func() error) error {
	theirs := false // the turn left this invocation's hands
	return retry.Do(ctx, ru.commitPolicy(), func() error {
		err := commit()
		if !errors.Is(err, session.ErrConflict) {
			return err
		}
		sess, lerr := ru.r.Sessions.Load(ctx, ru.out.Session)
		if lerr != nil {
			theirs = true // not known to be ours: stop
			return errors.Join(err, lerr)
		}
		if !sess.State.Holds(ru.sess.State.Turn) {
			theirs = true
			return err
		}
		ru.sess.State = sess.State
		return err
	}, func(err error) bool { return !theirs && errors.Is(err, session.ErrConflict) })
}

// commitPolicy bounds retry like the session store's own retry of lost
// races (session.DefaultRetry, or the store's Config.Retry; the run's
// deadline bounds it further). A run that still loses stops as superseded;
// the tick reaps the turn when its lease runs out.
func (ru *core) commitPolicy() retry.Policy { return ru.r.Sessions.RetryPolicy() }

// fenceReads makes sure, before a step's first read tool starts, that the
// turn is still this invocation's. A side effect is fenced by its ledger
// write, and a model call by the checkpoint before it, whose chunk a
// cancel's close takes; but reads start as soon as the model answered,
// and their results are written with the step after they ran: a cancel,
// or a cancel and a delete, landed while the model answered would be
// learnt only after the reads. So when the step the model just completed
// is not yet written (the window a cancel may be in), one consistent read
// of the session's head (a GetItem) checks that the session is there and
// its open turn is this one; a lost race otherwise, and nothing runs. A
// step written since the model answered (an earlier call's side effect
// flushed it), or one this invocation resumed, needs no read.
func (ru *core) fenceReads(ctx context.Context) error {
	if !ru.billed || ru.sink.Buffered() == 0 {
		return nil
	}
	h, err := ru.r.Sessions.Head(ctx, ru.out.Session)
	switch {
	case errors.Is(err, dynamo.ErrNotFound):
		return fmt.Errorf("turn %s: the session was deleted before its reads ran: %w", ru.out.Turn, session.ErrConflict)
	case err != nil:
		return fmt.Errorf("turn %s: check the turn before its reads run: %w", ru.out.Turn, err)
	case h.Turn != ru.out.Turn:
		return fmt.Errorf("turn %s: the turn ended before its reads ran: %w", ru.out.Turn, session.ErrConflict)
	}
	return nil
}

// request is the model input of the turn's next step on history.
func (ru *core) request(history []conversation.Message) model.Request {
	return model.Request{
		System:    ru.agent.System,
		Messages:  ru.rep.Build(history, ru.sess.State.Turn.Messages),
		Tools:     ru.tools.Specs(),
		MaxTokens: ru.agent.MaxTokens,
		Step:      len(ru.turn.Steps) + 1,
	}
}

// identity names model m for the interceptors: the agent's identity for
// its own model, else what m says of itself.
func (ru *core) identity(m model.Model) model.Identity {
	if m == ru.agent.Model && ru.agent.Identity != (model.Identity{}) {
		return ru.agent.Identity
	}
	return model.IdentityOf(m)
}

func agentActor(turn string) reducer.Actor {
	return reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
}

// mustJSON marshals values that cannot fail to marshal: strings, plain
// maps, and values that came from json.Unmarshal.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// DataTools is the part that records the tools of an agent's Remote source
// a turn offers the model, as listed when the turn started:
// data-tools{data: {tools: [tool.Listed…]}}. It is written with the turn's
// first checkpoint, in the same chunk as its first step, so it costs no
// write of its own; every later invocation of the turn offers the tools it
// records.
const DataTools parts.Type = "data-tools"
