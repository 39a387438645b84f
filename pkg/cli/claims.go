package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/baton-run/baton/pkg/claims"
	"github.com/baton-run/baton/pkg/operator"
)

// showClaims prints the session's grants, one line each, and what its turn
// is blocked on.
func showClaims(w io.Writer, s operator.Session) {
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

func claimList(cs []claims.Claim) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return strings.Join(out, ", ")
}

// release asks the operator API to release a grant an ended turn left.
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
	path := "/sessions/" + seg(pos[0]) + "/grants/" + seg(pos[1]) + "/release"
	if err := cl.call(ctx, http.MethodPost, path, struct{}{}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "released %s of session %s\n", pos[1], pos[0])
	return nil
}
