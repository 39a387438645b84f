package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/baton-run/baton/pkg/claims"
	"github.com/baton-run/baton/pkg/operator"
)

// showClaims prints the session's grants, one line each, and what its turn
// is blocked on.
func showClaims(w io.Writer, s operator.Session) {
	for _, g := range s.Grants {
		state := "held"
		if g.Quarantined {
			state = "QUARANTINED until a verdict"
		}
		fmt.Fprintf(w, "grant    %s %s by %s: %s\n", g.ID, state, g.ToolCall, claimList(g.Claims))
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
