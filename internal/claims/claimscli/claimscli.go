package claimscli

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

// Show prints the session's grants, one line each, and what its turn is
// blocked on.
func Show(w io.Writer, s api.Session) {
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

// Releaser is the part of the operator API's client Release calls;
// *api.Client is one.
type Releaser interface {
	ReleaseGrant(ctx context.Context, id, grant string) error
	ReleaseOrphan(ctx context.Context, grant string) error
}

// Release asks the operator API to release grant of session, a grant an
// ended turn left, and says so on w. A session deleted since (404) may
// have left the grant orphaned: then it releases the caller's orphan of
// that id instead (POST /claims/orphans/{grant}/release), which names the
// session in its id.
func Release(ctx context.Context, cl Releaser, w io.Writer, session, grant string) error {
	err := cl.ReleaseGrant(ctx, session, grant)
	if ae, ok := errors.AsType[*api.StatusError](err); ok && ae.Status == http.StatusNotFound && strings.Contains(grant, session) {
		if oerr := cl.ReleaseOrphan(ctx, grant); oerr == nil {
			fmt.Fprintf(w, "released %s, orphaned by the deleted session %s\n", grant, session)
			return nil
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "released %s of session %s\n", grant, session)
	return nil
}

// Orphans prints the caller's orphaned grants, one each with how to
// release it.
func Orphans(w io.Writer, out api.Orphans) {
	for _, g := range out.Orphans {
		fmt.Fprintf(w, "orphan   %s of deleted session %s (call %s), since %s: %s\n", g.ID, g.Session, g.ToolCall,
			g.Deadline.UTC().Format(time.RFC3339), claimList(g.Claims))
		fmt.Fprintf(w, "         once its effect is over: baton release %s %s\n", g.Session, g.ID)
	}
}
