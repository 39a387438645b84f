package reducer

import (
	"errors"

	"github.com/baton-run/baton/internal/claims"
)

// Resource claims as session facts: a side-effecting call's grant is
// recorded with its execution (claim.granted in the same write as
// execution.started), its release once its result is durable
// (claim.released), and its quarantine when the execution became uncertain
// (claim.quarantined). A call the broker blocked suspends the turn as
// CauseBlocked, the suspension naming what blocks it (Fact.Block, a
// claims.Block). What the session holds is claims.Held's, which State
// embeds; the rules here add what the turn and the actor decide.
const (
	ClaimGranted     Type = "claim.granted"
	ClaimReleased    Type = "claim.released"
	ClaimQuarantined Type = "claim.quarantined"
)

// CauseBlocked: a tool call's claims conflict with grants other calls
// hold (or the namespace is at capacity); the turn waits, with no
// invocation running, until a release wakes it (or its poll does).
const CauseBlocked Cause = "blocked"

// applyClaimGranted checks and folds a fact of type ClaimGranted: the open
// turn's running invocation holds the grant (again, after a quarantine).
func (s claimRules) applyClaimGranted(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn is granted claims")
	}
	if err := claims.Fold(&s.Held).Hold(f.Grant); err != nil {
		return s.illegal(f, "%v", err)
	}
	return nil
}

// applyClaimReleased checks and folds a fact of type ClaimReleased. The
// runner releases its turn's grants; an operator may release only a grant
// whose turn is over (cancelled while its execution was uncertain, say):
// the open turn's grants are settled through its execution's verdict.
func (s claimRules) applyClaimReleased(f Fact) error {
	i, err := s.heldGrant(f)
	if err != nil {
		return err
	}
	if f.Actor.Kind == ActorOperator && s.Turn != nil && s.Turn.ID == s.Grants[i].Turn {
		return s.refuse(f, ErrNotPending, "grant %s belongs to the open turn: settle its execution instead", f.Grant.ID)
	}
	claims.Fold(&s.Held).Free(i)
	return nil
}

// applyClaimQuarantined checks and folds a fact of type ClaimQuarantined.
func (s claimRules) applyClaimQuarantined(f Fact) error {
	i, err := s.heldGrant(f)
	if err != nil {
		return err
	}
	claims.Fold(&s.Held).Quarantine(i)
	return nil
}

// heldGrant finds the grant f names among those the session holds.
func (s claimRules) heldGrant(f Fact) (int, error) {
	i, err := claims.Fold(&s.Held).Find(f.Grant)
	switch {
	case errors.Is(err, claims.ErrNotHeld):
		return 0, s.refuse(f, ErrNotPending, "%v", err)
	case err != nil:
		return 0, s.illegal(f, "%v", err)
	}
	return i, nil
}
