package reducer

import "fmt"

// Versions: each turn.started and turn.resumed fact records the agent's
// fingerprint (a digest of its definition), the build it ran on and the
// agent's policy for a resume on a changed definition (OnChange), so a
// reader knows which definition each invocation of a turn ran, and a turn
// that resumed on a changed agent is flagged. A call.stale fact names the
// calls a turn had waiting that a deploy changed under them.

// Version is what an invocation of a turn ran on.
type Version struct {
	// Fingerprint digests the agent's definition: its prompt, model,
	// tools and their policies, guardrails and limits.
	Fingerprint string `json:"fingerprint"`
	// Build names the code: the Lambda function's version, or "local".
	Build string `json:"build,omitempty"`
	// OnChange is the agent's policy for a resume on a changed
	// definition; the turn.started fact's governs the whole turn.
	OnChange OnChange `json:"onChange,omitempty"`
}

// OnChange is what a resumed turn does when the agent's fingerprint
// changed since the turn started.
type OnChange string

// The policies: run on the new definition (continue, also when empty),
// end the turn with a reason (fail), or resume on the build the turn
// started on (pin).
const (
	OnChangeContinue OnChange = "continue"
	OnChangeFail     OnChange = "fail"
	OnChangePin      OnChange = "pin"
)

// Check reports a policy that is none of continue, fail and pin (empty is
// continue).
func (p OnChange) Check() error {
	switch p {
	case "", OnChangeContinue, OnChangeFail, OnChangePin:
		return nil
	}
	return fmt.Errorf("%q: want continue, fail or pin", string(p))
}

// FailChanged is the failure of a turn that resumed on a changed agent
// whose policy is fail, or whose pinned build is gone.
const FailChanged FailureKind = "changed"

// CallStale: a resumed turn found calls it had waiting (for an approval,
// a callback, or an uncertain execution's verdict) that the deploy since
// changed: Fact.Stale names them and why. None of them runs as it was;
// the model gets an error result, or the operator is asked again.
const CallStale Type = "call.stale"

// Stale is one call a deploy changed under a waiting turn.
type Stale struct {
	// Turn is the turn that found it, set when the fact is folded.
	Turn       string `json:"turn,omitempty"`
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	// Cause is why: StaleRemoved, StaleSchema or StaleChanged.
	Cause string `json:"cause"`
	// Detail is what the model was told, or why the operator is asked
	// again.
	Detail string `json:"detail,omitempty"`
}

// Why a waiting call is stale: its tool is gone, its schema refuses the
// recorded input (the model gets an error result), or the tool's effect,
// rules or schema changed since the call was approved (asked again).
const (
	StaleRemoved = "removed"
	StaleSchema  = "schema"
	StaleChanged = "changed"
)

func init() {
	appliers[CallStale] = rule(turnRules.applyCallStale)
}

// applyCallStale checks and folds a fact of type CallStale.
func (s turnRules) applyCallStale(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn finds stale calls")
	}
	if len(f.Stale) == 0 {
		return s.illegal(f, "names no call")
	}
	if len(s.Stale) > 0 && s.Stale[0].Turn != s.Turn.ID {
		s.Stale = nil // an earlier turn's
	}
	for _, c := range f.Stale {
		if c.ToolCallID == "" || c.Tool == "" || c.Cause == "" {
			return s.illegal(f, "a stale call is not named")
		}
		c.Turn = s.Turn.ID
		if !s.stale(c) {
			s.Stale = append(s.Stale, c)
		}
	}
	return nil
}

// stale reports whether the turn recorded c already (an invocation that
// died after recording it redoes the step).
func (s turnRules) stale(c Stale) bool {
	for _, o := range s.Stale {
		if o.ToolCallID == c.ToolCallID && o.Cause == c.Cause {
			return true
		}
	}
	return false
}

// versioned folds the version f records into the open turn: the first as
// the turn's, later ones as its latest, and whether the agent changed
// since the turn started.
func (t *Turn) versioned(f Fact) {
	if f.Version == nil {
		return
	}
	if t.Version == (Version{}) {
		t.Version = *f.Version
	}
	if f.Version.Fingerprint != t.Version.Fingerprint && t.Version.Fingerprint != "" {
		t.Changed = true
	}
	t.Latest = *f.Version
}
