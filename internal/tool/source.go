package tool

import (
	"context"
	"encoding/json"
	"errors"
)

// Listed is a tool as a Source listed it: what the model is offered and
// the rules its listing implies, without the code that calls it. A turn
// records the tools it offers as Listed, so a resumed invocation offers
// the same ones whatever the source lists by then.
type Listed struct {
	// Source names where the tool lives, such as an MCP server's name.
	Source      string          `json:"source"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Effect      Effect          `json:"effect"`
	Idempotent  bool            `json:"idempotent,omitempty"`
	// Approval: every call needs approval unless the agent says otherwise.
	Approval bool `json:"approval,omitempty"`
}

// Source provides tools that live outside the program, such as the tools
// of remote MCP servers, whose list may change at any time. A turn lists
// them once, when it starts.
type Source interface {
	// List returns the tools on offer now, in the order the model sees
	// them. An error that may pass, such as a server that cannot be
	// reached, wraps ErrUnavailable; any other is a configuration that
	// cannot work.
	List(ctx context.Context) ([]Listed, error)
	// Tools makes listed tools callable, with the agent's approval rules
	// applied. A call goes to the source by name; one the source no longer
	// has ends in an error the model sees.
	Tools(listed []Listed) []Tool
}

// ErrUnavailable marks a Source error that may pass: the source could not
// be reached or did not answer in time.
var ErrUnavailable = errors.New("tool source unavailable")

// Tools returns the registry's tools in order.
func (r *Registry) Tools() []Tool {
	out := make([]Tool, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, r.tools[name])
	}
	return out
}
