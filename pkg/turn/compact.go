package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// request is the model input of the turn's next step on history.
func (ru *run) request(history []conversation.Message) model.Request {
	return model.Request{
		System:    ru.agent.System,
		Messages:  ru.rep.Build(history, ru.sess.State.Turn.Messages),
		Tools:     ru.tools.Specs(),
		MaxTokens: ru.agent.MaxTokens,
	}
}

// errNoSummary is a summariser step that gave no text.
var errNoSummary = errors.New("turn: the summariser returned no text")

// compact runs the agent's compaction policy before a step: when the next
// request would pass the budget and there are ended turns beyond those
// kept, it has them summarised and records the compaction (see
// session.Store.Compact), then marks it in the stream. A summariser that
// stays unavailable (a transient model fault) suspends the turn like a
// step's fault; one that fails otherwise leaves the history as it is for
// the rest of the invocation, and the step runs on it. spent is the time
// the invocation's steps took so far. stop is set when the run must end
// with out and err, as after a failed write.
func (ru *run) compact(ctx context.Context, spent time.Duration) (stop bool, out Outcome, err error) {
	c := ru.agent.Compaction
	if c == nil || ru.compactOff {
		return false, Outcome{}, nil
	}
	history := ru.sess.History
	req := ru.request(history)
	est := model.Estimate(req)
	if est <= c.InputTokens*8/10 {
		return false, Outcome{}, nil
	}
	before := model.InputTokens(ctx, ru.agent.Model, req, true)
	if before <= c.InputTokens {
		return false, Outcome{}, nil
	}
	cut, turns := conversation.Cut(history, ru.sess.State.Compactions > 0, c.keep())
	if cut == 0 {
		ru.compactOff = true
		ru.r.log().WarnContext(ctx, "the request passes the compaction budget, but no ended turns are left to summarise",
			"session", ru.out.Session, "turn", ru.out.Turn, "inputTokens", before, "budget", c.InputTokens)
		return false, Outcome{}, nil
	}
	var summary string
	var usage reducer.Usage
	for tries := 1; ; tries++ {
		summary, usage, err = ru.summarise(ctx, c, history[:cut])
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return true, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
		}
		// A summariser that is down for now is a model fault: tried again
		// within the step's time, then the turn suspends for it, as for a
		// step; the request is not sent over the budget meanwhile.
		var me *model.Error
		if errors.As(err, &me) && me.Transient() {
			redo, werr := ru.backoff(ctx, me, tries, spent)
			switch {
			case werr != nil:
				return true, ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, werr)
			case redo:
				continue
			}
			out, err := ru.suspendFault(ctx, me)
			return true, out, err
		}
		ru.compactOff = true
		ru.r.log().WarnContext(ctx, "compaction failed; the step runs on the whole history", "session", ru.out.Session,
			"turn", ru.out.Turn, "err", err)
		return false, Outcome{}, nil
	}
	compacted := append([]conversation.Message{conversation.Summary(summary)}, history[cut:]...)
	after := model.Estimate(ru.request(compacted))
	if after >= est {
		ru.compactOff = true
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
		out, err := ru.stopped(ctx, err)
		return true, out, err
	}
	ru.emit(streams.Part{Type: streams.DataCompacted, Data: mustJSON(rec)})
	ru.r.log().InfoContext(ctx, "context compacted", "session", ru.out.Session, "turn", ru.out.Turn,
		"turns", turns, "before", before, "after", after)
	return false, Outcome{}, nil
}

// summarise asks the compaction's model for a summary of msgs and returns
// its text and usage, priced.
func (ru *run) summarise(ctx context.Context, c *Compaction, msgs []conversation.Message) (string, reducer.Usage, error) {
	ctx, cancel := context.WithDeadline(ctx, ru.deadline.Add(-ru.lim.Margin))
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
	for ev, err := range m.Stream(ctx, req) {
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
