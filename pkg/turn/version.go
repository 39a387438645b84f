package turn

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
)

// Versions: each invocation records what it runs on (reducer.Version): the
// agent's Fingerprint and the Runner's Build.

// Fingerprint digests what decides how agent a's turns run: its system
// prompt, model (provider and name), output caps, limits, steering,
// children, compaction policy, guardrails, and each tool's name,
// description, schema, effect, idempotency, approval rules, timeout,
// retry, callback policy and whether it claims resources. Two agents with
// the same fingerprint run a turn alike; a changed definition changes it.
// A Go rule's predicate and a Go guardrail's check are code: only their
// presence counts, so a change to their code alone goes unseen (the
// Build shows that).
func Fingerprint(a *Agent) string {
	type toolPrint struct {
		Name, Description string
		Print             string
		Timeout           time.Duration
		Retry             tool.Retry
	}
	type guardPrint struct {
		Name     string
		Stage    string
		Timeout  time.Duration
		Parallel bool
	}
	var tools []toolPrint
	if a.Tools != nil {
		for _, t := range a.Tools.Tools() {
			tools = append(tools, toolPrint{Name: t.Name, Description: t.Description, Print: ToolPrint(t),
				Timeout: t.Timeout, Retry: t.Retry})
		}
	}
	var guards []guardPrint
	for _, g := range a.Guardrails {
		guards = append(guards, guardPrint{Name: g.Name, Stage: string(g.Stage), Timeout: g.Timeout, Parallel: g.Parallel})
	}
	var comp any
	if c := a.Compaction; c != nil {
		comp = []any{c.InputTokens, c.KeepTurns, c.KeepSteps, c.Name, c.Price, c.Prompt, c.MaxTokens, c.Model != nil}
	}
	id := a.Identity
	if id == (model.Identity{}) && a.Model != nil {
		id = model.IdentityOf(a.Model)
	}
	b, _ := json.Marshal(struct { // plain values: cannot fail
		System        string
		Model         model.Identity
		MaxTokens     int
		MaxToolOutput int
		Limits        Limits
		Price         *reducer.Price
		Steering      reducer.Steering
		Children      Children
		Compaction    any
		Tools         []toolPrint
		Remote        bool
		Guardrails    []guardPrint
	}{a.System, id, a.MaxTokens, a.MaxToolOutput, a.Limits, a.Price, a.Steering, a.Children, comp, tools, a.Remote != nil, guards})
	sum := sha256.Sum256(b)
	return "fp1-" + hex.EncodeToString(sum[:10])
}

// version is what an invocation of agent a on r runs on, and the agent's
// policy for a resume on a changed definition.
func (r *Runner) version(a *Agent) *reducer.Version {
	build := r.Build
	if build == "" {
		build = "local"
	}
	policy := a.OnChange
	if policy == "" {
		policy = reducer.OnChangeContinue
	}
	return &reducer.Version{Fingerprint: Fingerprint(a), Build: build, OnChange: policy}
}

// ToolPrint digests what an approval of a call of tool t approves: the
// tool's name, input schema, effect, idempotency, approval rules (a Go
// predicate by its presence), callback policy and whether it claims
// resources. An approval records it; a call approved for a tool whose
// print changed since (a deploy) asks again.
func ToolPrint(t tool.Tool) string {
	p := struct {
		Name       string
		Schema     json.RawMessage
		Effect     tool.Effect
		Idempotent bool
		Approval   bool
		Rules      []tool.Rule
		When       bool
		Callback   *callback.Policy
		Claims     bool
	}{t.Name, t.Schema, t.Effect, t.Idempotent, t.NeedsApproval != nil, tool.Rules(t), false, t.Callback, t.Claims != nil}
	for _, r := range p.Rules {
		p.When = p.When || r.When != nil
	}
	b, _ := json.Marshal(p) // plain values: cannot fail
	sum := sha256.Sum256(b)
	return "tp1-" + hex.EncodeToString(sum[:10])
}
