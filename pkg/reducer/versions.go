package reducer

// Versions: each turn.started and turn.resumed fact records the agent's
// fingerprint (a digest of its definition) and the build it ran on, so a
// reader knows which definition each invocation of a turn ran, and a turn
// that resumed on a changed agent is flagged.

// Version is what an invocation of a turn ran on.
type Version struct {
	// Fingerprint digests the agent's definition: its prompt, model,
	// tools and their policies, guardrails and limits.
	Fingerprint string `json:"fingerprint"`
	// Build names the code: the Lambda function's version, or "local".
	Build string `json:"build,omitempty"`
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
