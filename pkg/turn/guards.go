package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// Guardrails (internal/guard) in the run. Input guardrails check each
// message the turn answers before its first step (settle), or, marked
// Parallel, while that step streams (parallel); output guardrails check
// each step's text before it is kept (output). Every decision is a
// guardrail.decided fact. A block ends the turn with the reason shown
// (a data-guardrail part); a redaction goes on with the replacement; an
// escalation suspends the turn for an approval bound to the decision,
// and on resume an approval goes on (releasing a held step) and a denial
// blocks. A step a guardrail stops is discarded: the parts of it already
// streamed are retracted, its usage still counted.

// guards runs the agent's guardrails.
type guards struct {
	*core
	end *ending
	// deliver steers the waiting messages in (steering.deliver): a
	// steered message a guardrail blocks is delivered withheld, so that it
	// does not start the next turn.
	deliver func(context.Context) error
}

// guarded is a step a guardrail stopped: the decisions to record, the one
// that stopped it, and, for an escalation at output, the step held.
type guarded struct {
	recs  []guard.Record
	stop  guard.Record
	held  json.RawMessage
	usage *reducer.Usage // the discarded step's, for an escalation to count
}

func (g *guarded) Error() string {
	return fmt.Sprintf("guardrail %s: %s", g.stop.Guardrail, g.stop.Action)
}

// of returns the agent's guardrails at stage, parallel or not (Input).
func (g *guards) of(stage guard.Stage, parallel bool) []guard.Guardrail {
	var out []guard.Guardrail
	for _, gr := range g.agent.Guardrails {
		if gr.Stage == stage && (stage == guard.Output || gr.Parallel == parallel) {
			out = append(out, gr)
		}
	}
	return out
}

// settle acts on escalations at output an operator answered and checks
// the messages the turn answers before its first step. again is set when
// it released a held step, whose calls the loop settles next.
func (g *guards) settle(ctx context.Context) (stop, again bool, out Outcome, err error) {
	if len(g.agent.Guardrails) == 0 {
		return false, false, Outcome{}, nil
	}
	t := g.sess.State.Turn
	for _, r := range t.Guards {
		if r.Action != guard.Escalate || r.Stage != guard.Output {
			continue
		}
		ans, ok := t.Answer(r.Call)
		switch {
		case !ok:
			continue
		case ans.Decision == reducer.Deny:
			// The held step's usage was counted as it was withheld.
			out, err = g.block(ctx, r, denial(r, ans), nil)
			return true, false, out, err
		case len(g.turn.Steps) <= r.Step:
			if err := g.release(r); err != nil {
				out, err = g.end.fail(ctx, reducer.FailInternal, err)
				return true, false, out, err
			}
			return false, true, Outcome{}, nil
		}
	}
	if len(g.turn.Steps) > 0 {
		return false, false, Outcome{}, nil
	}
	ids := make([]string, len(t.Messages))
	for i, m := range t.Messages {
		ids[i] = m.ID
	}
	stop, out, err = g.check(ctx, ids, false)
	return stop, false, out, err
}

// steered checks the messages waiting to be steered in that the turn's
// stream does not hold yet, parallel guardrails included: there is no
// step to run them beside.
func (g *guards) steered(ctx context.Context) (stop bool, out Outcome, err error) {
	if len(g.agent.Guardrails) == 0 || len(g.sess.State.Turn.Steer) == 0 {
		return false, Outcome{}, nil
	}
	have := map[string]bool{}
	for _, m := range g.turn.Delivered() {
		have[m.ID] = true
	}
	var ids []string
	for _, m := range g.sess.State.Turn.Steer {
		if !have[m.ID] {
			ids = append(ids, m.ID)
		}
	}
	return g.check(ctx, ids, true)
}

// denial is the reason a denied escalation blocks with.
func denial(r guard.Record, ans reducer.Answer) string {
	if ans.Reason != "" {
		return ans.Reason
	}
	return r.Reason
}

// check runs the input guardrails (the parallel ones too, when all is
// set) on each of the turn's messages ids, in order, each on the text the
// ones before it left, and acts on their decisions: a block ends the turn,
// an escalation suspends it until answered, and a denied one is recorded
// as a block of the message, so that it is withheld.
func (g *guards) check(ctx context.Context, ids []string, all bool) (stop bool, out Outcome, err error) {
	grs := g.of(guard.Input, false)
	if all {
		grs = append(grs, g.of(guard.Input, true)...)
	}
	for _, id := range ids {
		for _, gr := range grs {
			st := g.sess.State.Turn
			r, ok := st.Guard(gr.Name, guard.Input, id, 0)
			if !ok {
				text := g.messageText(id)
				r = g.decide(ctx, gr, guard.Subject{Text: text, Message: id})
				if r.Action == guard.Escalate {
					out, err = g.escalate(ctx, []guard.Record{r}, text, nil, false, nil)
					return true, out, err
				}
				if err := g.append(ctx, decided(g.out.Turn, r)); err != nil {
					out, err = g.end.stopped(ctx, err)
					return true, out, err
				}
			}
			switch r.Action {
			case guard.Block:
				out, err = g.blockMessage(ctx, r, r.Reason, all)
				return true, out, err
			case guard.Escalate:
				ans, answered := st.Answer(r.Call)
				switch {
				case !answered:
					out, err = g.end.suspend(ctx, reducer.CauseApproval, 0)
					return true, out, err
				case ans.Decision == reducer.Deny:
					b := guard.Record{Guardrail: r.Guardrail, Stage: guard.Input, Message: id,
						Decision: guard.Decision{Action: guard.Block, Reason: denial(r, ans)}}
					if err := g.append(ctx, decided(g.out.Turn, b)); err != nil {
						out, err = g.end.stopped(ctx, err)
						return true, out, err
					}
					out, err = g.blockMessage(ctx, b, b.Reason, all)
					return true, out, err
				}
			}
		}
	}
	return false, Outcome{}, nil
}

// decide runs gr on s, filled in with the turn's names, and records its
// decision; one that could not decide blocks, its error kept.
func (g *guards) decide(ctx context.Context, gr guard.Guardrail, s guard.Subject) guard.Record {
	s.Session, s.Turn, s.Agent = g.out.Session, g.out.Turn, g.agent.Name
	d, err := guard.Run(ctx, gr, s)
	r := guard.Record{Guardrail: gr.Name, Stage: gr.Stage, Decision: d, Message: s.Message, Step: s.Step}
	if err != nil {
		r.Error = err.Error()
		g.r.log().WarnContext(ctx, "guardrail failed; it blocks", "session", g.out.Session, "turn", g.out.Turn, "guardrail", gr.Name, "err", err)
	}
	return r
}

// decided is the fact of record r.
func decided(turn string, r guard.Record) reducer.Fact {
	return reducer.Fact{Type: reducer.GuardDecided, Actor: agentActor(turn), Turn: turn, Guard: &r}
}

// decisions are the facts of records rs, in order.
func decisions(turn string, rs []guard.Record) []reducer.Fact {
	facts := make([]reducer.Fact, len(rs))
	for i, r := range rs {
		facts[i] = decided(turn, r)
	}
	return facts
}

// shown is the data-guardrail part showing r.
func shown(r guard.Record, reason string, discarded bool, usage *reducer.Usage) parts.Part {
	return conversation.Guarded(conversation.GuardrailData{Guardrail: r.Guardrail, Stage: string(r.Stage), Action: string(r.Action),
		Reason: reason, Discarded: discarded, Approval: r.Approval, Usage: usage})
}

// block ends the turn as r decided, the user shown reason; usage is a
// held step's, counted as the block discards it.
func (g *guards) block(ctx context.Context, r guard.Record, reason string, usage *reducer.Usage) (Outcome, error) {
	r.Action = guard.Block
	g.emit(shown(r, reason, false, usage))
	return g.end.complete(ctx)
}

// blockMessage ends the turn as r, a block of a message, decided; a
// steered one (steered set) is delivered first, withheld.
func (g *guards) blockMessage(ctx context.Context, r guard.Record, reason string, steered bool) (Outcome, error) {
	if steered {
		if err := g.deliver(ctx); err != nil {
			return g.end.stopped(ctx, err)
		}
	}
	return g.block(ctx, r, reason, nil)
}

// escalate records recs, whose last asks for an operator, and suspends the
// turn for its approval. text is what the operator is shown; held the
// step withheld, at output; the step's parts already shown are retracted
// (discarded) and its usage counted.
func (g *guards) escalate(ctx context.Context, recs []guard.Record, text string, held json.RawMessage, discarded bool, usage *reducer.Usage) (Outcome, error) {
	last := &recs[len(recs)-1]
	last.Call = guard.CallID(g.out.Turn, len(g.sess.State.Turn.Guards)+len(recs)-1)
	last.Approval, last.Held = "ap_"+last.Call, held
	facts := decisions(g.out.Turn, recs)
	input := mustJSON(map[string]any{"guardrail": last.Guardrail, "stage": last.Stage, "reason": last.Reason, "text": text})
	ap := reducer.Approval{ID: last.Approval, ToolCallID: last.Call, Tool: guard.ToolPrefix + last.Guardrail, Input: input,
		Expires: g.now().Add(g.lim.ApprovalTTL)}
	g.emit(shown(*last, last.Reason, discarded, usage))
	return g.end.suspendForApproval(ctx, []reducer.Approval{ap}, facts...)
}

// release emits the step an approved escalation at output held, its
// usage already counted.
func (g *guards) release(r guard.Record) error {
	var ps []parts.Part
	if err := json.Unmarshal(r.Held, &ps); err != nil {
		return fmt.Errorf("guardrail %s: the held step does not decode: %w", r.Guardrail, err)
	}
	for i := range ps {
		if ps[i].Type == parts.MessageMetadata {
			ps[i].MessageMetadata = conversation.Released(ps[i].MessageMetadata)
		}
	}
	g.emit(ps...)
	g.replay()
	return nil
}

// stopped decides what a step a guardrail stopped means: a redaction of
// the input redoes it, a block ends the turn, an escalation suspends it.
func (g *guards) stopped(ctx context.Context, gd *guarded) (redo bool, out Outcome, err error) {
	if gd.stop.Action == guard.Escalate {
		text := ""
		if gd.stop.Stage == guard.Input {
			text = g.messageText(gd.stop.Message)
		} else {
			text = stepTextOf(gd.held)
		}
		out, err = g.escalate(ctx, gd.recs, text, gd.held, true, gd.usage)
		return false, out, err
	}
	if err := g.append(ctx, decisions(g.out.Turn, gd.recs)...); err != nil {
		out, err = g.end.stopped(ctx, err)
		return false, out, err
	}
	if gd.stop.Action == guard.Redact {
		return true, Outcome{}, nil
	}
	out, err = g.end.complete(ctx)
	return false, out, err
}

// messageText is the text of the turn's message id (one it answers, or
// one waiting to be steered in), as the model would see it.
func (g *guards) messageText(id string) string {
	m, _ := g.sess.State.Turn.Message(id)
	return m.Text
}

// --- the step ---

// parallel is the input guardrails running while the turn's first step
// streams.
type parallel struct {
	n       int
	results chan guard.Record
	got     []guard.Record
	cancel  context.CancelFunc
}

// parallel starts the parallel input guardrails not yet decided, before
// the turn's first step; nil when there are none.
func (g *guards) parallel(ctx context.Context) *parallel {
	if len(g.turn.Steps) > 0 {
		return nil
	}
	grs := g.of(guard.Input, true)
	if len(grs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &parallel{results: make(chan guard.Record, len(grs)*len(g.sess.State.Turn.Messages)), cancel: cancel}
	for _, m := range g.sess.State.Turn.Messages {
		for _, gr := range grs {
			if _, ok := g.sess.State.Turn.Guard(gr.Name, guard.Input, m.ID, 0); ok {
				continue
			}
			p.n++
			go func() { p.results <- g.decide(ctx, gr, guard.Subject{Text: m.Text, Message: m.ID}) }()
		}
	}
	if p.n == 0 {
		cancel()
		return nil
	}
	return p
}

// tripped reports whether a decision so far stops the step.
func (p *parallel) tripped() bool {
	if p == nil {
		return false
	}
	for {
		select {
		case r := <-p.results:
			p.got = append(p.got, r)
		default:
			return firstStop(p.got) != nil
		}
	}
}

// wait returns all the decisions, and the first that stops the step.
func (p *parallel) wait() ([]guard.Record, *guard.Record) {
	for len(p.got) < p.n {
		p.got = append(p.got, <-p.results) // each is bounded by its timeout
	}
	return p.got, firstStop(p.got)
}

func (p *parallel) stop() {
	if p != nil {
		p.cancel()
	}
}

// firstStop returns the first decision of rs that is not allow, nil for none.
func firstStop(rs []guard.Record) *guard.Record {
	for i := range rs {
		if rs[i].Action != guard.Allow {
			return &rs[i]
		}
	}
	return nil
}

// output runs the output guardrails on step sp's text. It returns the
// step's parts to keep (rewritten by a redaction, after a data-guardrail
// part), or a *guarded error for a step a guardrail stopped.
func (g *guards) output(ctx context.Context, sp *stepParts) ([]parts.Part, bool, error) {
	grs := g.of(guard.Output, false)
	if len(grs) == 0 {
		return sp.parts, false, nil
	}
	text := stepText(sp.parts)
	if text == "" {
		return sp.parts, false, nil
	}
	var recs []guard.Record
	changed := false
	for _, gr := range grs {
		r := g.decide(ctx, gr, guard.Subject{Text: text, Step: sp.n})
		recs = append(recs, r)
		switch r.Action {
		case guard.Redact:
			text, changed = r.Text, true
		case guard.Block, guard.Escalate:
			gd := &guarded{recs: recs, stop: r}
			if r.Action == guard.Escalate {
				ps := sp.parts
				if changed {
					ps = redacted(ps, text, sp.n)
				}
				held := mustJSON(ps)
				if len(held) > guard.MaxHeld {
					gd.stop.Action, gd.stop.Reason = guard.Block, "the answer is too long to hold for review"
					gd.recs[len(recs)-1] = gd.stop
				} else {
					gd.held = held
				}
			}
			return nil, false, gd
		}
	}
	if err := g.append(ctx, decisions(g.out.Turn, recs)...); err != nil {
		return nil, false, &flushError{err}
	}
	if !changed {
		return sp.parts, false, nil
	}
	last := recs[len(recs)-1]
	for _, r := range recs {
		if r.Action == guard.Redact {
			last = r
		}
	}
	return append([]parts.Part{shown(last, last.Reason, sp.pushed > 0, nil)}, redacted(sp.parts, text, sp.n)...), true, nil
}

// stepText is the text of a step's parts: its text blocks, one per line.
func stepText(ps []parts.Part) string {
	var b strings.Builder
	for _, p := range ps {
		switch p.Type {
		case parts.TextStart:
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
		case parts.TextDelta:
			b.WriteString(p.Delta)
		}
	}
	return b.String()
}

// stepTextOf is the text of a held step.
func stepTextOf(held json.RawMessage) string {
	var ps []parts.Part
	_ = json.Unmarshal(held, &ps)
	return stepText(ps)
}

// redacted is step n's parts with its text blocks replaced by one block
// of text, where the first was.
func redacted(ps []parts.Part, text string, n int) []parts.Part {
	out := make([]parts.Part, 0, len(ps))
	placed := false
	for _, p := range ps {
		switch p.Type {
		case parts.TextStart, parts.TextDelta, parts.TextEnd:
			if !placed {
				id := fmt.Sprintf("s%d-g", n)
				out = append(out, parts.Part{Type: parts.TextStart, ID: id}, parts.Part{Type: parts.TextDelta, ID: id, Delta: text},
					parts.Part{Type: parts.TextEnd, ID: id})
				placed = true
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// discard ends step sp, which gd stopped: the parts of it already
// streamed are retracted, and its usage counted.
func (g *guards) discard(sp *stepParts, gd *guarded) ([]parts.Part, error) {
	r := gd.stop
	var u *reducer.Usage
	if sp.finished {
		u = &sp.usage
	}
	if r.Action == guard.Escalate {
		gd.usage = u // escalate shows it, once the approval's id is known
		return nil, gd
	}
	g.emit(shown(r, r.Reason, true, u))
	return nil, gd
}
