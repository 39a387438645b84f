package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// Going back: baton turns lists a session's turns (the points a rewind or
// fork names), baton rewind takes a session back to one, and baton fork
// makes a new session from one.

// pointFlags are the flags that name a point.
type pointFlags struct {
	turn, before string
	step         int
	cancel       bool
}

func (e *env) pointCommand(name string) (*command, *pointFlags) {
	c := e.flags(name, true)
	p := &pointFlags{}
	c.fs.StringVar(&p.turn, "turn", "", "the turn: just after it ended, or with --step within it")
	c.fs.IntVar(&p.step, "step", -1, "within --turn, after this many steps (0 answers the turn's messages afresh)")
	c.fs.StringVar(&p.before, "before", "", "just before this turn started, its messages dropped")
	c.fs.BoolVar(&p.cancel, "cancel", false, "cancel the open turn first (refused otherwise)")
	return c, p
}

func (p *pointFlags) request() (api.RewindRequest, error) {
	in := api.RewindRequest{Point: reducer.Point{Turn: p.turn, Before: p.before}, Cancel: p.cancel}
	if p.step >= 0 {
		n := p.step
		in.Step = &n
	} else if p.step != -1 {
		return in, usagef("--step %d is negative", p.step)
	}
	if err := in.Point.Check(); err != nil {
		return in, usagef("%v (--turn T [--step N] or --before T)", err)
	}
	return in, nil
}

// rewind takes a session back to a point.
func (e *env) rewind(ctx context.Context, args []string) error { return e.goBack(ctx, args, false) }

// fork makes a new session from a point of one.
func (e *env) fork(ctx context.Context, args []string) error { return e.goBack(ctx, args, true) }

func (e *env) goBack(ctx context.Context, args []string, fork bool) error {
	name := map[bool]string{false: "rewind", true: "fork"}[fork]
	c, pf := e.pointCommand(name)
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	in, err := pf.request()
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	var out api.Rewound
	if fork {
		out, err = cl.Fork(ctx, pos[0], in)
	} else {
		out, err = cl.Rewind(ctx, pos[0], in)
	}
	if err != nil {
		return err
	}
	if c.json {
		return e.printJSON(out)
	}
	if fork {
		fmt.Fprintf(e.stdout, "forked session %s from %s at %s (%s)\n", out.Session, pos[0], in.Point, out.Status)
	} else {
		fmt.Fprintf(e.stdout, "rewound session %s to %s (%s)\n", out.Session, in.Point, out.Status)
	}
	printEffects(e.stdout, out.Effects)
	return nil
}

// printEffects lists the side effects after a point.
func printEffects(w io.Writer, effects []reducer.Effect) {
	if len(effects) == 0 {
		fmt.Fprintln(w, "no side effect ran after that point")
		return
	}
	fmt.Fprintln(w, "side effects after that point (going back does not undo them):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ef := range effects {
		state := "completed"
		if !ef.Completed {
			state = "not completed: it may or may not have happened"
		}
		fmt.Fprintf(tw, "  %s\t%s\tturn %s\t%s\n", ef.Tool, ef.Execution, ef.Turn, state)
	}
	tw.Flush()
}

// Turn is one turn as baton turns lists it: the points of a rewind or
// fork.
type Turn struct {
	ID    string `json:"id"`
	Seq   int64  `json:"seq"`
	Ended string `json:"ended,omitempty"`
	Steps int64  `json:"steps,omitempty"`
	// Reopened is set for a turn a rewind or fork reopened at a step.
	Reopened bool `json:"reopened,omitempty"`
}

// turns lists the session's turns, from its facts.
func (e *env) turns(ctx context.Context, args []string) error {
	c := e.flags("turns", true)
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	facts, err := cl.Facts(ctx, pos[0], 0)
	if err != nil {
		return err
	}
	out := []Turn{}
	at := map[string]int{}
	for _, f := range facts.Facts {
		switch {
		case f.Type == reducer.TurnStarted:
			at[f.Turn] = len(out)
			out = append(out, Turn{ID: f.Turn, Seq: f.Seq})
		case f.Type == reducer.SessionRewound && f.Rewind != nil && f.Rewind.Turn != nil:
			at[f.Rewind.Turn.ID] = len(out)
			out = append(out, Turn{ID: f.Rewind.Turn.ID, Seq: f.Seq, Reopened: true})
		case f.Ends():
			if i, ok := at[f.Turn]; ok {
				out[i].Ended = string(f.Type)
				if f.Usage != nil {
					out[i].Steps = f.Usage.Steps
				}
			}
		}
	}
	if c.json {
		return e.printJSON(out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tSEQ\tENDED\tSTEPS")
	for _, t := range out {
		ended := t.Ended
		if ended == "" {
			ended = "open"
		}
		if t.Reopened {
			ended += " (reopened)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", t.ID, t.Seq, ended, t.Steps)
	}
	return tw.Flush()
}
