package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/model"
)

// Effect says what a tool does to the world.
type Effect string

// Effects. Write and External calls are side effects.
const (
	Read     Effect = "read"
	Write    Effect = "write"
	External Effect = "external"
)

// Call is one invocation of a tool, and what the runner knows of it. The
// runner sets every field it knows; a test calling Run directly may set
// only those its tool reads.
type Call struct {
	// ID is baton's id for the call, unique within the session.
	ID    string
	Name  string
	Input json.RawMessage
	// IdempotencyKey is the same for every run of one tool call (a retry,
	// a run after a crash, an operator's rerun), so a tool that honours it
	// never applies a side effect twice.
	IdempotencyKey string
	// Session, Turn and Step say where the call was made: the session, its
	// turn, and the turn's step (from 1) whose model output made it.
	Session, Turn string
	Step          int
	// Owner is the session's owner, the caller who created it.
	Owner string
	// Execution is the id of the execution ledger's record of a side
	// effect, and Attempt its number among the call's executions (from 1).
	// A read has neither.
	Execution string
	Attempt   int
	// Try numbers the tries of this run of the call, from 1: a transient
	// error retried by the tool's Retry policy tries again under the same
	// execution and idempotency key.
	Try int
	// Approval is the operator's approval of the call; nil when the call
	// needed none.
	Approval *Approved
}

// Tool is one callable tool.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Effect      Effect
	Idempotent  bool
	// NeedsApproval reports whether a call with this input must wait for an
	// operator. Nil means never. The runner calls it only with input the
	// schema accepted (Registry.Check comes first); a Rule's Needs, or
	// AnyRule, fails closed on input it cannot read.
	NeedsApproval func(input json.RawMessage) bool
	// Run executes the call. An error is reported to the model as a tool
	// error result and does not fail the turn, unless it is an *Error of
	// another kind: Transient is retried by Retry, Fatal fails the turn
	// (see Invoke).
	Run func(ctx context.Context, call Call) (json.RawMessage, error)
	// Timeout bounds each try of a call; zero leaves only the step's
	// deadline, which bounds it anyway.
	Timeout time.Duration
	// Retry is the policy for a call whose Run returned a Transient error.
	Retry Retry
	// Claims computes the resource claims a call with this input needs
	// (claims.Of for static declarations, claims.Typed for a function on
	// the typed input); nil claims nothing. Only a side effect claims:
	// the runner asks the broker for them before it records the
	// execution, and releases them once the result is durable.
	Claims claims.Func
	// Callback, when set, makes the tool complete by callback: its Run
	// opens one (callback.Open), hands the token to another system and
	// returns callback.ErrPending; the call's result is what the token's
	// holder sends, or a timeout error under the policy. Only a side
	// effect completes by callback.
	Callback *callback.Policy
	// Err, when set, is why the tool could not be made (such as a Go input
	// type that has no JSON Schema). NewRegistry refuses such a tool.
	Err error

	// rules and claimed are what NeedsApproval and Claims were made of,
	// when Approve and Claim made them: an agent's check reads the fields
	// they name (Rules, Claimed).
	rules   []Rule
	claimed []claims.Static
}

// Approval reports whether a call with input needs approval.
func (t Tool) Approval(input json.RawMessage) bool {
	return t.NeedsApproval != nil && t.NeedsApproval(input)
}

// SideEffect reports whether running the tool changes the world.
func (t Tool) SideEffect() bool { return t.Effect == Write || t.Effect == External }

// Always is an approval policy that asks for every call.
func Always(json.RawMessage) bool { return true }

// Registry is an agent's set of tools, in the order the model sees them.
type Registry struct {
	order   []string
	tools   map[string]Tool
	schemas map[string]*compiled // each compiled on its first Check
}

// NewRegistry builds a registry. Names must be unique and non-empty.
// Each schema is compiled on its tool's first Check, not here: a schema
// that does not compile fails that tool's calls (check schemas from
// outside with CheckSchema first).
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]Tool, len(tools)), schemas: make(map[string]*compiled, len(tools))}
	for _, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tool: a tool has no name")
		}
		if _, dup := r.tools[t.Name]; dup {
			return nil, fmt.Errorf("tool: %q registered twice", t.Name)
		}
		if t.Err != nil {
			return nil, fmt.Errorf("tool: %q: %w", t.Name, t.Err)
		}
		if t.Run == nil {
			return nil, fmt.Errorf("tool: %q has no Run", t.Name)
		}
		if t.Callback != nil && !t.SideEffect() {
			return nil, fmt.Errorf("tool: %q completes by callback but is a read: only a side effect (write or external) does", t.Name)
		}
		if t.Callback != nil {
			if err := t.Callback.Check(); err != nil {
				return nil, fmt.Errorf("tool: %q: %w", t.Name, err)
			}
		}
		if t.Claims != nil && !t.SideEffect() {
			return nil, fmt.Errorf("tool: %q claims resources but is a read: only a side effect (write or external) claims", t.Name)
		}
		r.order = append(r.order, t.Name)
		r.tools[t.Name] = t
		r.schemas[t.Name] = &compiled{raw: slices.Clone(t.Schema)}
	}
	return r, nil
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Specs describes the tools to a model, in registry order.
func (r *Registry) Specs() []model.ToolSpec {
	specs := make([]model.ToolSpec, 0, len(r.order))
	for _, name := range r.order {
		t := r.tools[name]
		specs = append(specs, model.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	return specs
}
