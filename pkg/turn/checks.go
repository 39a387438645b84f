package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// Spend and timer checks: before each step, whether the turn is done, has
// reached its cap of steps or a spend cap, or has no time left in this
// invocation for another step (stepper.check); the spend cap a turn has
// reached (stepper.overSpend); and whether a step fits before the deadline
// (stepper.fits).

// check decides, before the next step, whether the turn ends or suspends
// here: answered, at its cap of steps, over a spend cap, or out of this
// invocation's steps or time.
func (ru *stepper) check(ctx context.Context, a *attempt) (stop bool, out Outcome, err error) {
	// The model has answered all it was given; messages waiting to be
	// steered in are delivered just before the next step, so one the
	// turn has no step left for starts the next turn instead.
	answered := false
	if last := ru.turn.Last(); last != nil && len(last.Calls) == 0 && !steered(ru.turn) {
		answered = true
	}
	capped := len(ru.turn.Steps) >= ru.lim.MaxStepsPerTurn
	reached := ru.overSpend()
	switch {
	case answered && (len(ru.sess.State.Turn.Steer) == 0 || capped || reached != nil):
		out, err = ru.end.complete(ctx)
	case capped:
		out, err = ru.end.fail(ctx, reducer.FailLimit, fmt.Errorf("the turn reached its cap of %d steps", ru.lim.MaxStepsPerTurn))
	case reached != nil && ru.lim.Spend.Fail:
		out, err = ru.end.fail(ctx, reducer.FailLimit, errors.New(reached.String()))
	case reached != nil:
		out, err = ru.end.suspend(ctx, reducer.CauseLimit, 0, reducer.Fact{Type: reducer.TurnSuspended, Limit: reached})
	case ru.out.Steps >= ru.lim.MaxStepsPerInvocation || !ru.fits(a.spent, 0):
		out, err = ru.end.outOfTime(ctx, a.fault)
	default:
		return false, Outcome{}, nil
	}
	return true, out, err
}

// overSpend names the spend cap the turn has reached, if any: the turn's
// usage so far, or the session's (its ended turns plus this turn so far),
// against the agent's caps overridden by those operators raised.
func (ru *stepper) overSpend() *reducer.Limit {
	st := ru.sess.State
	u := ru.turn.Usage()
	if l := ru.lim.Spend.Turn.Over(st.Turn.Caps).Reach(reducer.ScopeTurn, u); l != nil {
		return l
	}
	return ru.lim.Spend.Session.Over(st.Caps).Reach(reducer.ScopeSession, st.Usage.Sub(st.Turn.Usage).Add(u))
}

// fits reports whether another step, as long as the average so far, would
// end before the deadline minus the margin after waiting wait.
func (ru *stepper) fits(spent, wait time.Duration) bool {
	var avg time.Duration
	if ru.out.Steps > 0 {
		avg = spent / time.Duration(ru.out.Steps)
	}
	return ru.now().Add(wait + avg).Before(ru.deadline.Add(-ru.lim.Margin))
}
