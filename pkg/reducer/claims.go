package reducer

import (
	"slices"

	"github.com/baton-run/baton/internal/claims"
)

// Resource claims as session facts: a side-effecting call's grant is
// recorded with its execution (claim.granted in the same write as
// execution.started), its release once its result is durable
// (claim.released), and its quarantine when the execution became uncertain
// (claim.quarantined). A call the broker blocked suspends the turn as
// CauseBlocked, the suspension naming what blocks it (Fact.Block).
const (
	ClaimGranted     Type = "claim.granted"
	ClaimReleased    Type = "claim.released"
	ClaimQuarantined Type = "claim.quarantined"
)

// CauseBlocked: a tool call's claims conflict with grants other calls
// hold (or the namespace is at capacity); the turn waits, with no
// invocation running, until a release wakes it (or its poll does).
const CauseBlocked Cause = "blocked"

// Block is what a blocked call waits for: the broker's outcome (blocked
// or over capacity), the grants in its way and the earlier waiters it may
// not pass.
type Block struct {
	ToolCallID string         `json:"toolCallId"`
	Tool       string         `json:"tool"`
	Claims     []claims.Claim `json:"claims"`
	Outcome    claims.Outcome `json:"outcome"`
	Blockers   []claims.Grant `json:"blockers,omitempty"`
	Ahead      int            `json:"ahead,omitempty"`
}

// GrantID is the id of the grant a tool call's executions run under: the
// same for every attempt of the call, so a rerun keeps its grant.
func GrantID(session, toolCallID string) string { return "gr_" + session + "_" + toolCallID }

// Grant returns the grant the session holds by id.
func (s State) Grant(id string) (claims.Grant, bool) {
	for _, g := range s.Grants {
		if g.ID == id {
			return g, true
		}
	}
	return claims.Grant{}, false
}

// applyClaimGranted checks and folds a fact of type ClaimGranted: the open
// turn's running invocation holds the grant (again, after a quarantine).
func (s claimRules) applyClaimGranted(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn is granted claims")
	}
	g := f.Grant
	if g == nil || g.ID == "" || g.ToolCall == "" || len(g.Claims) == 0 {
		return s.illegal(f, "grant not named")
	}
	if err := claims.CheckAll(g.Claims); err != nil {
		return s.illegal(f, "%v", err)
	}
	held := *g
	held.Quarantined = false
	held.Claims = slices.Clone(g.Claims)
	if i := slices.IndexFunc(s.Grants, func(x claims.Grant) bool { return x.ID == g.ID }); i >= 0 {
		s.Grants[i] = held
		return nil
	}
	s.Grants = append(s.Grants, held)
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
	s.Grants = slices.Delete(s.Grants, i, i+1)
	return nil
}

// applyClaimQuarantined checks and folds a fact of type ClaimQuarantined.
func (s claimRules) applyClaimQuarantined(f Fact) error {
	i, err := s.heldGrant(f)
	if err != nil {
		return err
	}
	s.Grants[i].Quarantined = true
	return nil
}

// heldGrant finds the grant f names among those the session holds.
func (s claimRules) heldGrant(f Fact) (int, error) {
	if f.Grant == nil || f.Grant.ID == "" {
		return 0, s.illegal(f, "grant not named")
	}
	i := slices.IndexFunc(s.Grants, func(x claims.Grant) bool { return x.ID == f.Grant.ID })
	if i < 0 {
		return 0, s.refuse(f, ErrNotPending, "grant %s is not held", f.Grant.ID)
	}
	return i, nil
}
