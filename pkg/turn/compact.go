package turn

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// errNoSummary is a summariser step that gave no text.
var errNoSummary = errors.New("turn: the summariser returned no text")

// compactor runs the agent's compaction policy, owning whether it is off
// for the rest of the invocation; the endings stop the turn.
type compactor struct {
	*core
	end     ender
	stepper modelCaller // the summariser is called as a step's model is, and backs off as it does
	// off stops compaction for the rest of the invocation, after one that
	// failed or had nothing to summarise.
	off bool
}

// modelCaller is the port through which compaction calls its summariser
// as a step calls its model (stepper): through the model interceptors,
// backing off a retryable fault.
type modelCaller interface {
	stream(ctx context.Context, m model.Model, req model.Request) iter.Seq2[model.Event, error]
	backoff(ctx context.Context, me *model.Error, tries int, spent time.Duration) (bool, error)
}

// compact runs the agent's compaction policy before a step. When the next
// request would pass the budget it summarises, in one model call, the
// ended turns before those kept and records the compaction (see
// session.Store.Compact), marking it in the stream; or, with no such turns
// left, the open turn's steps before those kept, as a data-compacted part
// that stands the summary in for them (see conversation.Turn.Summary),
// flushed with the step's checkpoint. A summariser that stays unavailable
// (a transient model fault) suspends the turn like a step's fault; one
// that fails otherwise, or has nothing to summarise, leaves the input as it
// is for the rest of the invocation, and the step runs on it. spent is the
// time the invocation's steps took so far. stop is set when the run must
// end with out and err, as after a failed write.
func (ru *compactor) compact(ctx context.Context, spent time.Duration) (stop bool, out Outcome, err error) {
	c := ru.agent.Compaction
	if c == nil || ru.off {
		return false, Outcome{}, nil
	}
	history := ru.sess.History
	req := ru.request(history)
	est := model.Estimate(req)
	if est <= c.InputTokens*8/10 {
		return false, Outcome{}, nil
	}
	// Near the budget, the provider's count decides where it gives one.
	before := est
	if counter, ok := ru.agent.Model.(model.Counter); ok {
		if n, err := counter.CountTokens(ctx, req); err == nil && n > 0 {
			before = n
		}
	}
	if before <= c.InputTokens {
		return false, Outcome{}, nil
	}
	cut, turns := conversation.Cut(history, ru.sess.State.Compactions > 0, keepTurns(c))
	if cut == 0 {
		return ru.compactTurn(ctx, c, spent, est, before)
	}
	summary, usage, stop, out, err := ru.summary(ctx, c, history[:cut], spent)
	if stop || summary == "" {
		return stop, out, err
	}
	compacted := append([]conversation.Message{conversation.Summary(summary)}, history[cut:]...)
	after := model.Estimate(ru.request(compacted))
	if after >= est {
		ru.off = true
		ru.r.log().WarnContext(ctx, "the summary is no shorter than what it replaces; not compacting",
			"session", ru.out.Session, "turn", ru.out.Turn, "before", est, "after", after)
		return false, Outcome{}, nil
	}
	rec := reducer.Compaction{Turns: turns, Messages: cut, Kept: len(history) - cut, Before: before, After: after,
		Model: c.Name, Usage: usage}
	err = ru.retry(ctx, func() error {
		_, err := ru.r.Sessions.Compact(ctx, ru.sess, compacted, rec, agentActor(ru.out.Turn))
		return err
	})
	if err != nil {
		out, err := ru.end.stopped(ctx, err)
		return true, out, err
	}
	ru.emit(parts.Part{Type: parts.DataCompacted, Data: mustJSON(rec)})
	ru.r.log().InfoContext(ctx, "context compacted", "session", ru.out.Session, "turn", ru.out.Turn,
		"turns", turns, "before", before, "after", after)
	return false, Outcome{}, nil
}

// compactTurn summarises the open turn's steps before the last KeepSteps,
// with any earlier summary of the turn, for compact; est and before are
// the next request's estimated and counted input tokens.
func (ru *compactor) compactTurn(ctx context.Context, c *Compaction, spent time.Duration, est, before int64) (bool, Outcome, error) {
	t := ru.turn
	through := len(t.Steps) - keepSteps(c)
	if through <= t.Through {
		ru.off = true
		ru.r.log().WarnContext(ctx, "the request passes the compaction budget, but nothing is left to summarise",
			"session", ru.out.Session, "turn", ru.out.Turn, "inputTokens", before, "budget", c.InputTokens)
		return false, Outcome{}, nil
	}
	// What the summary replaces: the turn's summary so far, and the steps
	// after it up to through, as the model saw them.
	old := conversation.Turn{Steps: t.Steps[:through], Summary: t.Summary, Through: t.Through}.Messages()
	summary, usage, stop, out, err := ru.summary(ctx, c, old, spent)
	if stop || summary == "" {
		return stop, out, err
	}
	kept := conversation.Turn{Steps: t.Steps, Summary: summary, Through: through}.Messages()
	all := conversation.Turn{Steps: t.Steps, Summary: t.Summary, Through: t.Through}.Messages()
	after := est - model.Estimate(model.Request{Messages: all}) + model.Estimate(model.Request{Messages: kept})
	if after >= est {
		ru.off = true
		ru.r.log().WarnContext(ctx, "the summary is no shorter than the steps it replaces; not compacting",
			"session", ru.out.Session, "turn", ru.out.Turn, "before", est, "after", after)
		return false, Outcome{}, nil
	}
	ru.emit(parts.Part{Type: parts.DataCompacted, Data: conversation.TurnCompactedData(through, summary, before, after, usage)})
	ru.replay()
	ru.r.log().InfoContext(ctx, "the turn's earlier steps compacted", "session", ru.out.Session, "turn", ru.out.Turn,
		"steps", through, "before", before, "after", after)
	return false, Outcome{}, nil
}

// summary has msgs summarised, trying a summariser that is down for now
// again within the step's time and then suspending the turn for it, as for
// a step's transient fault: the request is not sent over the budget
// meanwhile. A summariser that fails otherwise stops compaction for the
// rest of the invocation: summary is then empty and stop false. A turn
// ended under the invocation (fenceReads) stops it before the call.
func (ru *compactor) summary(ctx context.Context, c *Compaction, msgs []conversation.Message, spent time.Duration) (summary string, usage reducer.Usage, stop bool, out Outcome, err error) {
	// The summariser is a model call like a step's, after reads whose step
	// is not yet written: fenced like them.
	if err := ru.fenceReads(ctx); err != nil {
		out, err := ru.end.stopped(ctx, err)
		return "", usage, true, out, err
	}
	for tries := 1; ; tries++ {
		summary, usage, err = ru.summarise(ctx, c, msgs)
		if err == nil {
			return summary, usage, false, Outcome{}, nil
		}
		if ctx.Err() != nil {
			return "", usage, true, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
		}
		var me *model.Error
		if errors.As(err, &me) && me.Transient() {
			redo, werr := ru.stepper.backoff(ctx, me, tries, spent)
			switch {
			case werr != nil:
				return "", usage, true, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, werr)
			case redo:
				continue
			}
			out, err := ru.end.suspendFault(ctx, me)
			return "", usage, true, out, err
		}
		ru.off = true
		ru.r.log().WarnContext(ctx, "compaction failed; the step runs on the whole input", "session", ru.out.Session,
			"turn", ru.out.Turn, "err", err)
		return "", usage, false, Outcome{}, nil
	}
}

// summarise asks the compaction's model for a summary of msgs and returns
// its text and usage, priced.
func (ru *compactor) summarise(ctx context.Context, c *Compaction, msgs []conversation.Message) (string, reducer.Usage, error) {
	ctx, cancel := ru.until(ctx, ru.deadline.Add(-ru.lim.Margin))
	defer cancel()
	m, price := c.Model, c.Price
	if m == nil {
		m = ru.agent.Model
		if price == nil {
			price = ru.agent.Price
		}
	}
	prompt := c.Prompt
	if prompt == "" {
		prompt = DefaultSummaryPrompt
	}
	maxTokens := c.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 2048
	}
	req := model.Request{System: prompt, MaxTokens: maxTokens, Messages: []conversation.Message{{
		Role:    conversation.User,
		Content: []conversation.Content{{Type: conversation.Text, Text: "The conversation to summarise:\n\n" + conversation.Transcript(msgs)}},
	}}}
	var b strings.Builder
	var u reducer.Usage
	finished := false
	for ev, err := range ru.stepper.stream(ctx, m, req) {
		if err != nil {
			return "", reducer.Usage{}, fmt.Errorf("turn: summarise %d messages: %w", len(msgs), err)
		}
		switch ev.Type {
		case model.TextDelta:
			b.WriteString(ev.Text)
		case model.Finish:
			u = reducer.Usage{InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens}
			if price != nil {
				u.CostMicroUSD = price.Cost(u.InputTokens, u.OutputTokens)
			}
			finished = true
		}
	}
	text := strings.TrimSpace(b.String())
	switch {
	case !finished:
		return "", reducer.Usage{}, &model.Error{Kind: model.Interrupted, Err: fmt.Errorf("turn: summarise %d messages: the stream ended without a finish", len(msgs))}
	case text == "":
		return "", reducer.Usage{}, errNoSummary
	}
	return text, u, nil
}
