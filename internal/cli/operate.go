package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// usageText is a usage for a person: tokens, steps and cost ("—" unpriced).
func usageText(u reducer.Usage) string {
	return fmt.Sprintf("tokens in %d, out %d, steps %d, cost %s", u.InputTokens, u.OutputTokens, u.Steps, costText(u.CostMicroUSD))
}

// costText is a cost in micro-dollars as dollars; "—" for none, as when
// the agent has no prices (its usage then carries no cost).
func costText(micro int64) string {
	if micro == 0 {
		return "—"
	}
	return fmt.Sprintf("$%.6f", float64(micro)/1e6)
}

// capsText is spend caps for a person, "" when there are none.
func capsText(c reducer.Caps) string {
	var parts []string
	if c.InputTokens > 0 {
		parts = append(parts, fmt.Sprintf("input tokens %d", c.InputTokens))
	}
	if c.OutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("output tokens %d", c.OutputTokens))
	}
	if c.Cost > 0 {
		parts = append(parts, fmt.Sprintf("cost $%g", c.Cost))
	}
	return strings.Join(parts, ", ")
}

// showOperations writes what show says about usage, caps, timers and the
// schedule, with the commands that act on them.
func showOperations(w io.Writer, s api.Session) {
	stale := ""
	if s.UsageStale {
		stale = " (the running turn's as its last suspension recorded it: its stream could not be read)"
	}
	fmt.Fprintf(w, "usage    %s%s\n", usageText(s.Usage), stale)
	if c := capsText(s.Caps); c != "" {
		fmt.Fprintf(w, "caps     %s\n", c)
	}
	if s.Compactions > 0 {
		fmt.Fprintf(w, "context  compacted %d times (older turns summarised)\n", s.Compactions)
	}
	if sc := s.Schedule; sc != nil {
		next := ""
		if !sc.Next.IsZero() {
			next = ", next " + sc.Next.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "schedule %q posts %q%s\n         baton schedule %s --clear\n", sc.Cron, clipText(sc.Text, 200), next, s.ID)
	}
}

// showTurnOperations writes what show says about the open turn's usage,
// caps, timer and spend limit.
func showTurnOperations(w io.Writer, s api.Session, t *api.Turn) {
	fmt.Fprintf(w, "         usage %s\n", usageText(t.Usage))
	if c := capsText(t.Caps); c != "" {
		fmt.Fprintf(w, "         caps %s\n", c)
	}
	if s.Status != reducer.Suspended {
		return
	}
	switch t.Cause {
	case reducer.CauseTimer:
		fmt.Fprintf(w, "timer    ends %s\n         baton wake %s [--at RFC3339]   (no --at: now)\n", t.Wake.UTC().Format(time.RFC3339), s.ID)
	case reducer.CauseLimit:
		showLimit(w, s.ID, t.Limit)
	default:
		if !t.Wake.IsZero() {
			fmt.Fprintf(w, "wake     %s\n", t.Wake.UTC().Format(time.RFC3339))
		}
	}
}

// showLimit writes what show says of a turn suspended at a spend cap: the
// cap it reached, when the suspension named it, and the raise that lets
// it go on.
func showLimit(w io.Writer, id string, l *reducer.Limit) {
	if l == nil {
		fmt.Fprintf(w, "limit    the turn reached a spend cap\n         baton raise %s --turn-cost USD | --session-cost USD | --turn-output-tokens N ...   |   baton cancel %s\n", id, id)
		return
	}
	flag := map[reducer.Measure]string{reducer.MeasureInputTokens: "input-tokens", reducer.MeasureOutputTokens: "output-tokens", reducer.MeasureCost: "cost"}[l.Measure]
	unit := "N"
	if l.Measure == reducer.MeasureCost {
		unit = "USD"
	}
	fmt.Fprintf(w, "limit    the turn reached its %s cap: %s\n         baton raise %s --%s-%s %s (more than %s)   |   baton cancel %s\n",
		l.Field(), l.Reaches(), id, l.Scope, flag, unit, l.Amount(l.Usage), id)
}

// raise sets new spend caps for a turn suspended at a limit.
func (e *env) raise(ctx context.Context, args []string) error {
	c := e.flags("raise", false)
	var in api.RaiseRequest
	c.fs.Int64Var(&in.Turn.InputTokens, "turn-input-tokens", 0, "the open turn's input token cap")
	c.fs.Int64Var(&in.Turn.OutputTokens, "turn-output-tokens", 0, "the open turn's output token cap")
	c.fs.Float64Var(&in.Turn.Cost, "turn-cost", 0, "the open turn's cost cap, USD")
	c.fs.Int64Var(&in.Session.InputTokens, "session-input-tokens", 0, "the session's input token cap")
	c.fs.Int64Var(&in.Session.OutputTokens, "session-output-tokens", 0, "the session's output token cap")
	c.fs.Float64Var(&in.Session.Cost, "session-cost", 0, "the session's cost cap, USD")
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	if in.Turn == (reducer.Caps{}) && in.Session == (reducer.Caps{}) {
		return usagef("name a cap to raise: --turn-input-tokens, --turn-output-tokens, --turn-cost, --session-input-tokens, --session-output-tokens or --session-cost")
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	if err := cl.Raise(ctx, pos[0], in); err != nil {
		return err
	}
	var what []string
	if t := capsText(in.Turn); t != "" {
		what = append(what, "turn: "+t)
	}
	if s := capsText(in.Session); s != "" {
		what = append(what, "session: "+s)
	}
	fmt.Fprintf(e.stdout, "raised the caps of session %s (%s)\n", pos[0], strings.Join(what, "; "))
	return nil
}

// wake ends, or moves, the timer of a turn suspended on one.
func (e *env) wake(ctx context.Context, args []string) error {
	c := e.flags("wake", false)
	var at string
	c.fs.StringVar(&at, "at", "", "when the timer ends, RFC 3339; absent: now")
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	var in api.TimerRequest
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return usagef("--at %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", at)
		}
		in.At = &t
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	if err := cl.SetTimer(ctx, pos[0], in.At); err != nil {
		return err
	}
	if in.At == nil {
		fmt.Fprintf(e.stdout, "ended the timer of session %s\n", pos[0])
	} else {
		fmt.Fprintf(e.stdout, "the timer of session %s ends %s\n", pos[0], in.At.UTC().Format(time.RFC3339))
	}
	return nil
}

// schedule sets or clears a session's schedule.
func (e *env) schedule(ctx context.Context, args []string) error {
	c := e.flags("schedule", false)
	var in api.ScheduleRequest
	var clear bool
	c.fs.StringVar(&in.Cron, "cron", "", "five cron fields, UTC")
	c.fs.StringVar(&in.Text, "text", "", "the message posted at each occurrence")
	c.fs.BoolVar(&clear, "clear", false, "remove the schedule")
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	switch {
	case clear && (in.Cron != "" || in.Text != ""):
		return usagef("--clear takes no --cron or --text")
	case !clear && (strings.TrimSpace(in.Cron) == "" || strings.TrimSpace(in.Text) == ""):
		return usagef("want --cron and --text, or --clear")
	}
	if !clear {
		if err := reducer.CheckCron(in.Cron); err != nil {
			return usagef("--cron: %v", err)
		}
		if err := reducer.CheckText("--text", in.Text); err != nil {
			return usagef("%v", err)
		}
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	if clear {
		if err := cl.ClearSchedule(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "cleared the schedule of session %s\n", pos[0])
		return nil
	}
	if err := cl.SetSchedule(ctx, pos[0], in); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "scheduled session %s: %q\n", pos[0], in.Cron)
	return nil
}
