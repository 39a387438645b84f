package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/pkg/reducer"
)

// Decision is one guardrail decision as `baton guardrails` prints it: a
// guardrail.decided fact.
type Decision struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	Turn string    `json:"turn"`
	guard.Record
}

// guardrails lists the session's guardrail decisions, from its facts.
func (e *env) guardrails(ctx context.Context, args []string) error {
	c := e.flags("guardrails", true)
	c.outputFlag()
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	if _, err := c.format(); err != nil {
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
	out := []Decision{}
	for _, f := range facts.Facts {
		if f.Type == reducer.GuardDecided && f.Guard != nil {
			r := *f.Guard
			r.Held = nil // the held step is the stream's to show
			out = append(out, Decision{Seq: f.Seq, Time: f.Time, Turn: f.Turn, Record: r})
		}
	}
	return e.emit(c, out, func() error {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTIME\tTURN\tGUARDRAIL\tSTAGE\tACTION\tON\tREASON")
		for _, d := range out {
			on := d.Message
			if d.Stage == guard.Output {
				on = fmt.Sprintf("step %d", d.Step)
			}
			why := d.Reason
			if d.Error != "" {
				why += " (" + d.Error + ")"
			}
			if d.Approval != "" {
				why += " [approval " + d.Approval + "]"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Seq, d.Time.Format(time.RFC3339), d.Turn, d.Guardrail, d.Stage, d.Action, on, clipText(why, maxShown))
		}
		if len(out) == 0 {
			fmt.Fprintln(tw, "(no guardrail decisions)")
		}
		return tw.Flush()
	})
}
