package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/baton-run/baton/api"
)

// showClaims prints the session's grants, one line each, and what its turn
// is blocked on.
func showClaims(w io.Writer, s api.Session) {
	for _, g := range s.Grants {
		ended := s.Turn == nil || s.Turn.ID != g.Turn
		state := "held"
		switch {
		case g.Quarantined && !ended:
			state = "QUARANTINED until its execution's verdict"
		case g.Quarantined:
			state = "QUARANTINED"
		}
		fmt.Fprintf(w, "grant    %s %s by %s: %s\n", g.ID, state, g.ToolCall, claimList(g.Claims))
		if ended {
			fmt.Fprintf(w, "         its turn ended; once its effect is over: baton release %s %s\n", s.ID, g.ID)
		}
	}
	if b := s.Blocked; b != nil {
		ids := make([]string, len(b.Blockers))
		for i, g := range b.Blockers {
			if g.Opaque {
				ids[i] = "a grant of another owner"
				continue
			}
			ids[i] = g.ID + " (session " + g.Session + ")"
			if g.Quarantined {
				ids[i] += " quarantined"
			}
		}
		fmt.Fprintf(w, "blocked  %s %s on %s: %s", b.Tool, b.Outcome, claimList(b.Claims), strings.Join(ids, ", "))
		if b.Ahead > 0 {
			fmt.Fprintf(w, "; %d earlier waiter(s) ahead", b.Ahead)
		}
		fmt.Fprintln(w)
	}
}

func claimList(cs []api.Claim) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return strings.Join(out, ", ")
}

// release asks the operator API to release a grant an ended turn left. A
// session deleted since (404) may have left the grant orphaned: then it
// releases the caller's orphan of that id instead (POST
// /claims/orphans/{grant}/release), which names the session in its id.
func (e *env) release(ctx context.Context, args []string) error {
	c := e.flags("release", false)
	pos, err := c.parse(args, 2, false, "SESSION GRANT")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	err = cl.ReleaseGrant(ctx, pos[0], pos[1])
	if ae, ok := errors.AsType[*api.StatusError](err); ok && ae.Status == http.StatusNotFound && strings.Contains(pos[1], pos[0]) {
		if oerr := cl.ReleaseOrphan(ctx, pos[1]); oerr == nil {
			fmt.Fprintf(e.stdout, "released %s, orphaned by the deleted session %s\n", pos[1], pos[0])
			return nil
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "released %s of session %s\n", pos[1], pos[0])
	return nil
}

// orphans lists the caller's orphaned grants: those deleted sessions held
// while their effect may still have run, held until released.
func (e *env) orphans(ctx context.Context, args []string) error {
	c := e.flags("orphans", true)
	c.outputFlag()
	if _, err := c.parse(args, 0, false, "no arguments"); err != nil {
		return err
	}
	if _, err := c.format(); err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	out, err := cl.Orphans(ctx)
	if err != nil {
		return err
	}
	return e.emit(c, out, func() error {
		for _, g := range out.Orphans {
			fmt.Fprintf(e.stdout, "orphan   %s of deleted session %s (call %s), since %s: %s\n", g.ID, g.Session, g.ToolCall,
				g.Deadline.UTC().Format(time.RFC3339), claimList(g.Claims))
			fmt.Fprintf(e.stdout, "         once its effect is over: baton release %s %s\n", g.Session, g.ID)
		}
		return nil
	})
}
