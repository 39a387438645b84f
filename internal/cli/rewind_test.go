package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/cli"
)

// showJSON is baton show -o json of session id.
func showJSON(t *testing.T, ctx context.Context, env vars, id string) api.Session {
	t.Helper()
	var s api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, env, "show", id, "-o", "json")), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// denyUntilIdle denies the session's approvals until it is idle.
func denyUntilIdle(t *testing.T, ctx context.Context, env vars, id string) {
	t.Helper()
	for {
		s := showJSON(t, ctx, env, id)
		if s.Status == "idle" && s.Inbox == 0 {
			return
		}
		for _, p := range s.Pending {
			must(t, ctx, env, "deny", id, p.ApprovalID, "--reason", "not now")
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s never became idle: %v", id, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestTurnsRewindAndFork: baton turns lists a session's turns; baton fork
// makes a new session from the end of one, leaving the session as it was;
// baton rewind --step 0 answers the turn afresh; while that turn is open a
// rewind is refused (exit 4) unless --cancel; a point that is not one is a
// usage error, and one the session lacks is refused by the server.
func TestTurnsRewindAndFork(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{"BATON_OPERATOR": fmt.Sprintf("rewinder-%d", time.Now().UnixNano())}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	must(t, ctx, env, "send", id, demoMessage)
	denyUntilIdle(t, ctx, env, id)

	var turns []cli.Turn
	if err := json.Unmarshal([]byte(must(t, ctx, env, "turns", id, "--json")), &turns); err != nil || len(turns) != 1 || turns[0].Ended != "turn.completed" || turns[0].Steps < 2 {
		t.Fatalf("turns: %+v, %v", turns, err)
	}
	turn := turns[0].ID
	if out := must(t, ctx, env, "turns", id); !strings.Contains(out, turn) || !strings.Contains(out, "turn.completed") {
		t.Fatalf("turns table:\n%s", out)
	}
	facts := showJSON(t, ctx, env, id).LastSeq

	out := must(t, ctx, env, "fork", id, "--turn", turn)
	var fork string
	if _, err := fmt.Sscanf(out, "forked session %s from", &fork); err != nil || !strings.Contains(out, "no side effect ran after that point") {
		t.Fatalf("fork printed %q (%v)", out, err)
	}
	if f := showJSON(t, ctx, env, fork); f.From != id || f.Status != "idle" || f.Agent != "demo" {
		t.Fatalf("the fork: %+v", f)
	}
	if s := showJSON(t, ctx, env, id); s.LastSeq != facts {
		t.Fatalf("the fork wrote to the session: seq %d, was %d", s.LastSeq, facts)
	}

	if out := must(t, ctx, env, "rewind", id, "--turn", turn, "--step", "0"); !strings.HasPrefix(out, "rewound session "+id+" to turn "+turn+" after step 0") {
		t.Fatalf("rewind printed %q", out)
	}
	// The turn runs again, and waits for the email's approval.
	for s := showJSON(t, ctx, env, id); len(s.Pending) == 0; s = showJSON(t, ctx, env, id) {
		select {
		case <-ctx.Done():
			t.Fatalf("the turn answered afresh never asked for approval: %+v", s)
		case <-time.After(50 * time.Millisecond):
		}
	}
	expect(t, ctx, env, cli.ExitConflict, "cancel", "rewind", id, "--before", turn)
	var rw api.Rewound
	if err := json.Unmarshal([]byte(must(t, ctx, env, "rewind", id, "--before", turn, "--cancel", "--json")), &rw); err != nil || rw.Session != id || rw.Status != "idle" {
		t.Fatalf("rewind --cancel: %+v, %v", rw, err)
	}
	if s := showJSON(t, ctx, env, id); s.Status != "idle" || s.Turns != 2 || s.Rewinds != 2 {
		t.Fatalf("after going back before the first turn: %+v", s)
	}

	expect(t, ctx, env, cli.ExitUsage, "name a turn", "rewind", id)
	expect(t, ctx, env, cli.ExitUsage, "give one", "fork", id, "--turn", turn, "--before", turn)
	expect(t, ctx, env, cli.ExitUsage, "no turn", "fork", id, "--turn", "turn_nope")
	expect(t, ctx, env, cli.ExitNotFound, "not found", "fork", "s_nope", "--turn", turn)
}
