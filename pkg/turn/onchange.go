package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// A resume on a changed definition: the one decision (decideChange) of
// what a turn does when it resumes on an agent whose fingerprint differs
// from the one it started on, by the policy it started under
// (reducer.OnChange): continue on the new definition, fail, or hand the
// turn to the build it started on (pin). Whatever the policy, the calls
// the turn had waiting that the change made stale (their tool gone,
// their input refused by its schema, their tool changed since approved)
// never run as they were: the ledger records them (call.stale) as it
// settles them.

// Pins hands a turn to the build it is pinned to: in a deployment, the
// resume function's published version (providers/awslambda).
type Pins interface {
	// Hand asks build to handle wake w, and returns once the build has it
	// (for Lambda: an asynchronous invocation of that version, queued).
	// An error matching ErrBuildGone means the build no longer exists.
	Hand(ctx context.Context, build string, w wake.Wake) error
}

// ErrBuildGone is Pins.Hand's error for a build that no longer exists.
var ErrBuildGone = errors.New("turn: the build is gone")

// Handed is the outcome of a resume that handed the turn to the build it
// is pinned to (Outcome.Build): that build resumes it.
const Handed Kind = "handed"

// change is what a resume decided about the definition it runs on.
type change struct {
	// policy is the turn's (its turn.started fact's, else the agent's).
	policy reducer.OnChange
	// changed: the fingerprint differs from the one the turn started on.
	changed bool
	// drifted: it differs from the last invocation's, so the calls the
	// turn has waiting were made on another definition.
	drifted bool
	// pin is the build to hand the turn to ("" to run here).
	pin string
	// fail, when set, ends the turn as it resumes (reducer.FailChanged).
	fail error
}

// decideChange decides how a resume of turn t runs on v, this runner's
// version of agent a.
func decideChange(t *reducer.Turn, a *Agent, v *reducer.Version) change {
	c := change{policy: t.Version.OnChange}
	if c.policy == "" {
		c.policy = a.OnChange // a turn from before policies were recorded
	}
	start := t.Version
	c.changed = start.Fingerprint != "" && start.Fingerprint != v.Fingerprint
	c.drifted = t.Latest.Fingerprint != "" && t.Latest.Fingerprint != v.Fingerprint
	switch c.policy {
	case reducer.OnChangeFail:
		if c.changed {
			c.fail = fmt.Errorf("the agent changed since the turn started (%s on build %s, now %s on build %s) and its policy is fail",
				start.Fingerprint, start.Build, v.Fingerprint, v.Build)
		}
	case reducer.OnChangePin:
		switch {
		case pinnable(start.Build) && start.Build != v.Build:
			// Pinned to its build whether or not the fingerprint
			// changed: a tool's code is not in the fingerprint.
			c.pin = start.Build
		case c.changed:
			// Its build runs another definition (an agent file read
			// from S3, a build that is not a published version): the
			// definition it started on is nowhere to run.
			c.fail = fmt.Errorf("the turn is pinned to build %s, which now runs a changed agent (%s, now %s on build %s): the definition it started on is gone",
				start.Build, start.Fingerprint, v.Fingerprint, v.Build)
		}
	}
	return c
}

// pinnable reports whether build names one a turn can be handed back to:
// a published version, not the unpublished "$LATEST" nor a local run.
func pinnable(build string) bool {
	return build != "" && build != "local" && build != "$LATEST"
}

// handOff hands session id's turn t to the build c pins it to. It reports
// whether it did; a build that is gone leaves the turn here: it runs on
// this build when its definition is the same, and fails naming the build
// when it changed (c.fail).
func (r *Runner) handOff(ctx context.Context, id string, st reducer.State, c *change, v *reducer.Version) (bool, error) {
	t := st.Turn
	err := ErrBuildGone
	if r.Pins != nil {
		err = r.Pins.Hand(ctx, c.pin, wake.Wake{Session: id, Reason: wake.Pinned, Seq: st.LastSeq, Trace: t.Trace})
	}
	switch {
	case err == nil:
		r.log().InfoContext(ctx, "turn handed to the build it is pinned to", "session", id, "turn", t.ID, "build", c.pin, "here", v.Build)
		return true, nil
	case !errors.Is(err, ErrBuildGone):
		return false, fmt.Errorf("turn: resume %s: hand the turn to build %s: %w", id, c.pin, err)
	}
	if c.changed {
		c.fail = fmt.Errorf("the turn is pinned to build %s, which is gone (%v), and the agent changed since it started (%s, now %s on build %s)",
			c.pin, err, t.Version.Fingerprint, v.Fingerprint, v.Build)
	}
	r.log().WarnContext(ctx, "the build the turn is pinned to is gone", "session", id, "turn", t.ID, "build", c.pin, "here", v.Build, "err", err)
	c.pin = ""
	return false, nil
}

// staleCall records that waiting call c is stale for cause, with detail
// (why the call does not run, or why the operator is asked again), and
// reports whether it is: the turn resumed on a definition other than the
// one the call was made on. Only the calls settled first in the
// invocation were made before it.
func (ru *ledger) staleCall(c *conversation.Call, cause, detail string) bool {
	if ru.change == nil || !ru.change.drifted || ru.settled {
		return false
	}
	ru.stale = append(ru.stale, reducer.Stale{ToolCallID: c.ID, Tool: c.Name, Cause: cause, Detail: detail})
	return true
}

// recordStale appends the call.stale fact of the calls settle found
// stale, if any.
func (ru *ledger) recordStale(ctx context.Context) error {
	if len(ru.stale) == 0 {
		return nil
	}
	f := reducer.Fact{Type: reducer.CallStale, Actor: agentActor(ru.out.Turn), Turn: ru.out.Turn, Stale: ru.stale}
	ru.stale = nil
	if err := ru.append(ctx, f); err != nil {
		return fmt.Errorf("turn %s: record the stale calls: %w", ru.out.Turn, err)
	}
	return nil
}
