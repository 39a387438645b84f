package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// devStore is a session store on the dev server's table and bucket
// (kumo's state is process-wide).
func devStore() *session.Store {
	emu := testenv.Emulator()
	names := provision.DefaultNames()
	return session.New(dynamo.New(emu.Clients.DynamoDB, names.Table), streams.New(emu.Clients.S3, names.Bucket))
}

// suspendedSession creates a demo session through the CLI and records in
// the dev server's table the facts of a turn suspended by suspended (the
// demo agent neither waits on timers nor has spend caps). It sends no
// wake, so the turn stays suspended until a command acts on it.
func suspendedSession(t *testing.T, ctx context.Context, store *session.Store, suspended reducer.Fact) (id, turn string) {
	t.Helper()
	id = strings.TrimSpace(must(t, ctx, vars{}, "new", "demo"))
	sess, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	turn = ids.New("turn")
	agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
	suspended.Type, suspended.Actor, suspended.Turn = reducer.TurnSuspended, agent, turn
	if _, err := store.Append(ctx, id, sess.State,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "local"},
			Message: &reducer.Message{ID: ids.New("msg"), Text: demoMessage}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
		suspended,
	); err != nil {
		t.Fatal(err)
	}
	return id, turn
}

// lastFact returns the session's last fact of type typ, failing the test
// if it has none.
func lastFact(t *testing.T, ctx context.Context, store *session.Store, id string, typ reducer.Type) reducer.Fact {
	t.Helper()
	facts, err := store.Facts(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(facts) - 1; i >= 0; i-- {
		if facts[i].Type == typ {
			return facts[i]
		}
	}
	t.Fatalf("session %s has no %s fact", id, typ)
	return reducer.Fact{}
}

// countFacts returns how many facts the session has.
func countFacts(t *testing.T, ctx context.Context, store *session.Store, id string) int {
	t.Helper()
	facts, err := store.Facts(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(facts)
}

// TestRaiseALimit: show names a turn suspended at a spend cap, its usage
// and cost, and the command that raises it; raise records the new caps
// once, as the operator; a bad flag or no cap changes nothing.
func TestRaiseALimit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	store := devStore()
	usage := reducer.Usage{InputTokens: 1200, OutputTokens: 340, Steps: 2, CostMicroUSD: 8700}
	id, _ := suspendedSession(t, ctx, store, reducer.Fact{Cause: reducer.CauseLimit, Usage: &usage})

	show := must(t, ctx, vars{}, "show", id)
	for _, want := range []string{"status   suspended (limit)",
		"usage    tokens in 1200, out 340, steps 2, cost $0.008700\n",
		"         usage tokens in 1200, out 340, steps 2, cost $0.008700\n",
		"limit    the turn reached a spend cap", "baton raise " + id + " --turn-cost USD"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}

	before := countFacts(t, ctx, store, id)
	expect(t, ctx, vars{}, cli.ExitUsage, "name a cap to raise", "raise", id)
	expect(t, ctx, vars{}, cli.ExitUsage, "invalid value", "raise", id, "--turn-cost", "lots")
	expect(t, ctx, vars{}, cli.ExitUsage, "turn.cost", "raise", id, "--turn-cost", "-1")
	expect(t, ctx, vars{}, cli.ExitNotFound, "session not found", "raise", "s_nope", "--turn-cost", "1")
	if n := countFacts(t, ctx, store, id); n != before {
		t.Fatalf("refused raises wrote %d facts", n-before)
	}

	out := must(t, ctx, vars{}, "raise", id, "--turn-cost", "0.5", "--session-output-tokens", "90000")
	if want := "raised the caps of session " + id + " (turn: cost $0.5; session: output tokens 90000)\n"; out != want {
		t.Fatalf("raise printed %q, want %q", out, want)
	}
	f := lastFact(t, ctx, store, id, reducer.LimitsRaised)
	if f.Raise == nil || f.Raise.Turn != (reducer.Caps{Cost: 0.5}) || f.Raise.Session != (reducer.Caps{OutputTokens: 90000}) ||
		f.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: "local"}) {
		t.Fatalf("limits.raised fact %+v raise %+v", f, f.Raise)
	}
	if n := countFacts(t, ctx, store, id); n != before+1 {
		t.Fatalf("raise wrote %d facts, want 1", n-before)
	}
}

// TestRaiseTheCapTheTurnReached: show names the cap a turn suspended at
// and the raise that lets it go on; a raise of another cap, or of that one
// not past the usage, is refused saying which cap to raise and writes
// nothing; a raise of the right one is recorded.
func TestRaiseTheCapTheTurnReached(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	store := devStore()
	usage := reducer.Usage{InputTokens: 1200, OutputTokens: 340, Steps: 2, CostMicroUSD: 8700}
	lim := reducer.Limit{Scope: reducer.ScopeTurn, Measure: reducer.MeasureCost, Cap: 0.005, Usage: 0.0087}
	id, _ := suspendedSession(t, ctx, store, reducer.Fact{Cause: reducer.CauseLimit, Usage: &usage, Limit: &lim})

	show := must(t, ctx, vars{}, "show", id)
	for _, want := range []string{"status   suspended (limit)",
		"limit    the turn reached its turn.cost cap: a cost of $0.008700 reaches the cap of $0.005000\n",
		"baton raise " + id + " --turn-cost USD (more than $0.008700)"} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	before := countFacts(t, ctx, store, id)
	want := "the turn is suspended at its turn.cost cap (a cost of $0.008700 reaches the cap of $0.005000); raise turn.cost past $0.008700"
	expect(t, ctx, vars{}, cli.ExitConflict, want, "raise", id, "--session-cost", "5")
	expect(t, ctx, vars{}, cli.ExitConflict, want, "raise", id, "--turn-cost", "0.0087", "--turn-input-tokens", "99999")
	if n := countFacts(t, ctx, store, id); n != before {
		t.Fatalf("refused raises wrote %d facts", n-before)
	}
	must(t, ctx, vars{}, "raise", id, "--turn-cost", "0.01")
	if f := lastFact(t, ctx, store, id, reducer.LimitsRaised); f.Raise == nil || f.Raise.Turn != (reducer.Caps{Cost: 0.01}) {
		t.Fatalf("limits.raised fact %+v", f)
	}
	if n := countFacts(t, ctx, store, id); n != before+1 {
		t.Fatalf("raise wrote %d facts, want 1", n-before)
	}
}

// TestWakeATimer: show names a turn waiting on a timer and when it ends;
// wake --at moves it, wake alone ends it; a bad time changes nothing, and
// a session not on a timer conflicts.
func TestWakeATimer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	store := devStore()
	ends := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	id, _ := suspendedSession(t, ctx, store, reducer.Fact{Cause: reducer.CauseTimer, Wake: ends})

	show := must(t, ctx, vars{}, "show", id)
	for _, want := range []string{"status   suspended (timer)", "timer    ends " + ends.Format(time.RFC3339), "baton wake " + id} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	before := countFacts(t, ctx, store, id)
	expect(t, ctx, vars{}, cli.ExitUsage, "not an RFC 3339 time", "wake", id, "--at", "tomorrow")
	if n := countFacts(t, ctx, store, id); n != before {
		t.Fatalf("a refused wake wrote %d facts", n-before)
	}
	later := ends.Add(24 * time.Hour)
	if out := must(t, ctx, vars{}, "wake", id, "--at", later.Format(time.RFC3339)); out != "the timer of session "+id+" ends "+later.Format(time.RFC3339)+"\n" {
		t.Fatalf("wake --at printed %q", out)
	}
	if f := lastFact(t, ctx, store, id, reducer.TimerSet); !f.Wake.Equal(later) {
		t.Fatalf("timer.set wake %s, want %s", f.Wake, later)
	}
	if show := must(t, ctx, vars{}, "show", id); !strings.Contains(show, "timer    ends "+later.Format(time.RFC3339)) {
		t.Fatalf("show after the move lacks the new end:\n%s", show)
	}
	if out := must(t, ctx, vars{}, "wake", id); out != "ended the timer of session "+id+"\n" {
		t.Fatalf("wake printed %q", out)
	}
	if f := lastFact(t, ctx, store, id, reducer.TimerSet); f.Wake.After(time.Now()) {
		t.Fatalf("wake without --at set the timer to %s, in the future", f.Wake)
	}
	// An idle session has no timer.
	idle := strings.TrimSpace(must(t, ctx, vars{}, "new", "demo"))
	expect(t, ctx, vars{}, cli.ExitConflict, "no turn suspended on a timer", "wake", idle)
}

// TestScheduleASession: schedule sets a schedule that show lists with its
// next occurrence, replaces it, and clears it; bad cron or flags change
// nothing; clearing twice conflicts.
func TestScheduleASession(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	store := devStore()
	id := strings.TrimSpace(must(t, ctx, vars{}, "new", "demo"))

	expect(t, ctx, vars{}, cli.ExitUsage, "want --cron and --text", "schedule", id, "--cron", "0 9 * * 1")
	expect(t, ctx, vars{}, cli.ExitUsage, "--clear takes no --cron", "schedule", id, "--clear", "--text", "x")
	expect(t, ctx, vars{}, cli.ExitUsage, "cron", "schedule", id, "--cron", "every monday", "--text", "Weekly report")
	if n := countFacts(t, ctx, store, id); n != 1 {
		t.Fatalf("refused schedules left %d facts, want the session's 1", n)
	}

	if out := must(t, ctx, vars{}, "schedule", id, "--cron", "0 9 * * 1", "--text", "Weekly report"); out != "scheduled session "+id+": \"0 9 * * 1\"\n" {
		t.Fatalf("schedule printed %q", out)
	}
	f := lastFact(t, ctx, store, id, reducer.ScheduleSet)
	if f.Schedule == nil || f.Schedule.Cron != "0 9 * * 1" || f.Schedule.Text != "Weekly report" {
		t.Fatalf("schedule.set fact %+v", f)
	}
	show := must(t, ctx, vars{}, "show", id)
	if !regexp.MustCompile(`schedule "0 9 \* \* 1" posts "Weekly report", next \d{4}-\d\d-\d\dT09:00:00Z\n\s+baton schedule ` + id + ` --clear`).MatchString(show) {
		t.Fatalf("show lacks the schedule:\n%s", show)
	}
	must(t, ctx, vars{}, "schedule", id, "--cron", "30 6 * * *", "--text", "Daily digest")
	if show := must(t, ctx, vars{}, "show", id); !strings.Contains(show, `schedule "30 6 * * *" posts "Daily digest"`) {
		t.Fatalf("show lacks the replaced schedule:\n%s", show)
	}
	if out := must(t, ctx, vars{}, "schedule", id, "--clear"); out != "cleared the schedule of session "+id+"\n" {
		t.Fatalf("schedule --clear printed %q", out)
	}
	lastFact(t, ctx, store, id, reducer.ScheduleCleared)
	if show := must(t, ctx, vars{}, "show", id); strings.Contains(show, "schedule ") {
		t.Fatalf("show after clearing still lists a schedule:\n%s", show)
	}
	expect(t, ctx, vars{}, cli.ExitConflict, "no schedule", "schedule", id, "--clear")
}
