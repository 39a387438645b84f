package conversation

import (
	"encoding/json"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
)

// GuardrailData is the data of a data-guardrail part: a guardrail's
// decision as the user is shown it. Discarded retracts the open step:
// the parts of it already streamed are dropped, as an abandoned step's
// are, and none of it reaches a later model request; Usage is what the
// discarded step was billed, which the turn's usage counts.
type GuardrailData struct {
	Guardrail string         `json:"guardrail"`
	Stage     string         `json:"stage"`
	Action    string         `json:"action"`
	Reason    string         `json:"reason,omitempty"`
	Discarded bool           `json:"discarded,omitempty"`
	Approval  string         `json:"approvalId,omitempty"`
	Usage     *reducer.Usage `json:"usage,omitempty"`
}

// Guarded is the data-guardrail part of d.
func Guarded(d GuardrailData) parts.Part {
	b, _ := json.Marshal(d) // plain struct: cannot fail
	return parts.Part{Type: parts.DataGuardrail, Data: b}
}

// guarded folds a data-guardrail part.
func (r *Replayer) guarded(p parts.Part) {
	var d GuardrailData
	if json.Unmarshal(p.Data, &d) != nil {
		return
	}
	if d.Discarded {
		r.open = nil
	}
	if d.Usage != nil {
		r.discarded.InputTokens += d.Usage.InputTokens
		r.discarded.OutputTokens += d.Usage.OutputTokens
		r.discarded.CostMicroUSD += d.Usage.CostMicroUSD
	}
}

// StepUsage reads a step's own usage from its message-metadata part; ok
// is false for any other part.
func StepUsage(p parts.Part) (u reducer.Usage, ok bool) {
	var m stepMeta
	if p.Type != parts.MessageMetadata || json.Unmarshal(p.MessageMetadata, &m) != nil {
		return reducer.Usage{}, false
	}
	return m.Usage, true
}

// Released is a held step's message-metadata as it is released after an
// operator approved it: its tokens and cost zeroed, since the data-guardrail
// part that withheld it counted them.
func Released(meta json.RawMessage) json.RawMessage {
	var m stepMeta
	if json.Unmarshal(meta, &m) != nil {
		return meta
	}
	m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CostMicroUSD = 0, 0, 0
	b, _ := json.Marshal(m) // plain struct: cannot fail
	return b
}
