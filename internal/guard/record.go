package guard

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Record is one decision as a guardrail.decided fact holds it.
type Record struct {
	Guardrail string `json:"guardrail"`
	Stage     Stage  `json:"stage"`
	Decision
	// Message is the checked message's id (Input); Step the checked
	// step's index in the turn (Output).
	Message string `json:"message,omitempty"`
	Step    int    `json:"step,omitempty"`
	// Error is why the guardrail could not decide and so blocked.
	Error string `json:"error,omitempty"`
	// Approval is the id of the approval an escalation asks for, and
	// Call the id it is bound to (CallID): no model's tool call has it.
	Approval string `json:"approval,omitempty"`
	Call     string `json:"call,omitempty"`
	// Held is, for an escalation at Output, the step's stream parts,
	// withheld from the stream until an operator approves them.
	Held json.RawMessage `json:"held,omitempty"`
}

// ToolPrefix begins the tool name of an escalation's approval:
// "guardrail:<name>".
const ToolPrefix = "guardrail:"

// IsTool reports whether tool names an escalation's approval.
func IsTool(tool string) bool { return strings.HasPrefix(tool, ToolPrefix) }

// CallID is the id an escalation's approval is bound to: the k-th
// decision of the turn, gr_<turn id without "turn_">_<k>.
func CallID(turn string, k int) string {
	return "gr_" + strings.TrimPrefix(turn, "turn_") + "_" + strconv.Itoa(k)
}

// MaxHeld is the largest step an escalation at Output holds for review;
// a larger one is blocked.
const MaxHeld = 64 << 10

// Placeholder is the text a blocked message is replaced with in what the
// model sees.
func Placeholder(guardrail string) string {
	return "[message withheld by guardrail " + guardrail + "]"
}
