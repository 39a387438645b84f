package baton

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/baton-run/baton/internal/tool"
)

// Tool is one tool an agent may call: a name, a description, a JSON Schema
// for its input object, an effect (read, write or external), whether it is
// idempotent, an approval policy and the function that runs a call. Make one
// from a Go function with Func; the fields are documented in package tool.
//
// The runner validates every call's input against the schema before the
// call, and gives the model an error result when it does not match. A Run
// error is also the model's to see, and does not fail the turn, unless it
// is marked Transient (retried by the tool's Retry policy, then the
// model's) or Fatal (the turn fails). A write or
// external tool is a side effect: the execution ledger records its start
// before it runs, so a crash mid-call is noticed on resume; an idempotent
// one is then run again with the same idempotency key, any other waits for
// an operator's rerun or abandon.
type Tool = tool.Tool

// Call is one invocation of a Tool, as its Run receives it and as CallOf
// reads it from a tool's context: the input, the idempotency key, and
// where the call stands (session, turn, step, owner, execution, attempt,
// try, approval).
type Call = tool.Call

// ToolOption sets a Tool's effect, idempotency or approval policy.
type ToolOption func(*Tool)

// Read marks a tool that only reads: it changes nothing, so it may run at
// any time, concurrently with other reads, and again after a crash.
func Read() ToolOption { return func(t *Tool) { t.Effect = tool.Read } }

// Write marks a tool that changes state the program owns. It is a side
// effect, recorded in the execution ledger. This is the default.
func Write() ToolOption { return func(t *Tool) { t.Effect = tool.Write } }

// External marks a tool that acts on the world outside (sends an email,
// charges a card). It is a side effect, recorded in the execution ledger.
func External() ToolOption { return func(t *Tool) { t.Effect = tool.External } }

// Idempotent marks a tool that may run twice for one call with no further
// effect, such as one that honours IdempotencyKey. After a crash mid-call
// it runs again with the same key instead of waiting for an operator.
func Idempotent() ToolOption { return func(t *Tool) { t.Idempotent = true } }

// NeedsApproval makes calls wait for an operator's approval: every call when
// no rule is given, otherwise a call that any of the rules asks for. An
// agent's Approvals replace the tool's policy by name. A rule that could
// not decide (such as one on an empty field) is refused: the tool does not
// register. So is, when an agent that has the tool is checked, a rule on a
// field the tool's input schema does not have (Over("amout", 100) on an
// input with amount), or of another type (Over on a string).
func NeedsApproval(rules ...Rule) ToolOption {
	return func(t *Tool) {
		for _, r := range rules {
			if err := r.Validate(); err != nil {
				t.Err = errors.Join(t.Err, err)
			}
		}
		tool.Approve(t, rules...)
	}
}

// Rule is an approval rule, the same for Go tools, an agent file's tools
// and MCP tools: Always, Never, or conditions on the call's input, any of
// which asks: the declarative PathPrefix and Over of the agent file, or a
// typed predicate made in Go (When). Rules fail closed: a condition asks unless it reads its field
// exactly once, under exactly its name (not another case), as the type it
// expects, and proves the call outside it. The runner checks the input
// against the tool's schema before any rule runs. See tool.Rule.
type Rule = tool.Rule

// PrefixRule and OverRule are a Rule's conditions.
type (
	PrefixRule = tool.PrefixRule
	OverRule   = tool.OverRule
)

// Always asks for approval of every call.
func Always() Rule { return Rule{Always: true} }

// Never asks for no call.
func Never() Rule { return Rule{Never: true} }

// PathPrefix asks when the string field of the input lies at or under the
// path prefix, comparing whole path elements ("/etc" covers "/etc/x", not
// "/etcetera") and ignoring case. It also asks when the field is missing or
// not a string, and for any path it cannot prove outside the prefix: one
// with a ".." element, a relative path against an absolute prefix, or one
// with a backslash, a percent sign or a control character.
func PathPrefix(field, prefix string) Rule {
	return Rule{PathPrefix: &PrefixRule{Field: field, Prefix: prefix}}
}

// Over asks when the number field of the input is greater than limit,
// compared exactly. It also asks when the field is missing, named in
// another case, given twice, or not a JSON number ("250", null, [250]).
func Over(field string, limit float64) Rule {
	return Rule{Over: &OverRule{Field: field, Limit: limit}}
}

// When asks for approval of a call when pred reports true of its input,
// decoded into an In as Func decodes it for the tool, so the predicate
// judges the very value the tool would run with. It fails closed: input
// that does not decode into an In, and a predicate that panics, ask. The
// runner checks the input against the tool's schema first. A nil pred
// makes a rule that does not validate.
//
//	baton.NeedsApproval(baton.When(func(in Refund) bool { return in.Amount < 0 || in.Amount > 100 }))
func When[In any](pred func(in In) bool) Rule {
	if pred == nil {
		return Rule{}
	}
	return WhenErr(func(in In) (bool, error) { return pred(in), nil })
}

// WhenErr is When for a predicate that may fail: an error asks.
func WhenErr[In any](pred func(in In) (bool, error)) Rule {
	if pred == nil {
		return Rule{}
	}
	return Rule{When: func(input json.RawMessage) (bool, error) {
		var in In
		if err := json.Unmarshal(input, &in); err != nil {
			return true, fmt.Errorf("approval predicate: input: %w", err)
		}
		return pred(in)
	}}
}

// Func makes a Tool of a typed Go function. The input JSON Schema is
// derived from In, which must be a struct (or a map with string keys):
// exported fields become properties, named by their json tags; a field
// without omitempty or omitzero is required; a jsonschema tag is the
// property's description; unknown properties are refused. Each call's
// input is validated against that schema before fn runs, then decoded into
// an In. fn's result is the tool's output, encoded as JSON; its error is
// the model's to see, unless it is marked Transient or Fatal. fn's context
// carries the call (CallOf).
//
// A tool is a Write side effect that needs no approval, unless opts say
// otherwise. When the schema cannot be derived from In, or an option is
// invalid, the Tool carries the error in Err and an agent that has it does
// not build.
func Func[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...ToolOption) Tool {
	t := Tool{Name: name, Description: description, Effect: tool.Write}
	for _, o := range opts {
		o(&t)
	}
	schema, err := jsonschema.For[In](nil)
	if err == nil && schema.Type != "object" {
		err = fmt.Errorf("input type %T: its JSON Schema has type %q, want a struct or map (type object)", *new(In), schema.Type)
	}
	if err != nil {
		t.Err = errors.Join(t.Err, fmt.Errorf("input schema: %w", err))
		return t
	}
	if t.Schema, err = json.Marshal(schema); err != nil {
		t.Err = errors.Join(t.Err, fmt.Errorf("input schema: %w", err))
		return t
	}
	t.Run = func(ctx context.Context, c Call) (json.RawMessage, error) {
		var in In
		if err := json.Unmarshal(c.Input, &in); err != nil {
			return nil, fmt.Errorf("%s: input: %w", name, err)
		}
		out, err := fn(tool.WithCall(ctx, c), in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("%s: output: %w", name, err)
		}
		return b, nil
	}
	return t
}

// CallOf returns what the runner knows of the tool call running in ctx:
// its id, session, turn, step, the session's owner, the execution and
// attempt of a side effect, the try of a retried transient error, the
// operator's approval with its approver and reason, and the idempotency
// key. It reports false outside a tool call. It is to a tool what
// activity.GetInfo is to a Temporal activity:
//
//	call, _ := baton.CallOf(ctx)
//	if call.Approval != nil {
//		log.Printf("approved by %s: %s", call.Approval.Approver, call.Approval.Reason)
//	}
func CallOf(ctx context.Context) (Call, bool) { return tool.CallFrom(ctx) }

// Data is a part a running tool sends to its turn's stream with Emit:
// progress, or a data type of the tool's own. Readers get it as a
// "data-<Type>" part; useChat shows it in message.parts (a later part of
// the same Type and ID replaces an earlier one) and passes it to onData.
// The model never sees it: what the model should know goes in the result.
type Data = tool.Data

// Errors Emit returns; either sends nothing.
var (
	// ErrNoStream: Emit outside a running tool call.
	ErrNoStream = tool.ErrNoStream
	// ErrBadData: a type that is not lowercase letters, digits and single
	// dashes, or is baton's own; an id over 200 bytes; a payload that does
	// not encode to JSON, or to more than MaxData bytes.
	ErrBadData = tool.ErrBadData
)

// MaxData is the largest encoded payload of one Data part.
const MaxData = tool.MaxData

// Emit sends d to the stream of the tool call running in ctx, live: the
// parts a step's tools emit are written together at most once per the
// agent's LiveFlush (250 ms when unset), so emitting costs no request per
// part. A tool reporting its progress:
//
//	for i, f := range files {
//		upload(ctx, f)
//		baton.Emit(ctx, baton.Data{Type: "progress", ID: "upload",
//			Data: map[string]any{"done": i + 1, "of": len(files)}})
//	}
//
// Parts of a call whose invocation ended before its result are marked by a
// data-redone part naming the call when the turn resumes; a call run again
// emits anew.
func Emit(ctx context.Context, d Data) error { return tool.Emit(ctx, d) }

// Approved is an operator's approval of a call (Call.Approval): its id,
// the approver's identity and their reason.
type Approved = tool.Approved

// IdempotencyKey returns the idempotency key of the tool call running in
// ctx, or "" outside one: CallOf(ctx)'s IdempotencyKey. The key is the
// same for every run of one call (a transient retry, a run after a crash,
// an operator's rerun), so a side effect keyed by it happens once.
func IdempotencyKey(ctx context.Context) string {
	c, _ := tool.CallFrom(ctx)
	return c.IdempotencyKey
}

// Timeout bounds each try of the tool's calls to d. The step's deadline
// bounds it too: a timeout never outlives the step. A try cut by it gives
// the model an error result saying the call timed out (and, for a side
// effect, that whether it took effect is unknown), unless the tool
// returned a Transient error, which is retried. A negative d is refused:
// the tool does not build.
func Timeout(d time.Duration) ToolOption {
	return func(t *Tool) {
		if d < 0 {
			t.Err = errors.Join(t.Err, fmt.Errorf("timeout %s: negative", d))
		}
		t.Timeout = d
	}
}

// RetryPolicy is a tool's policy for transient errors; see Retry.
type RetryPolicy = tool.Retry

// Retry retries a call whose tool returned a Transient error, up to
// attempts tries in all, waiting backoff before the second and doubling
// up to maxBackoff, while the wait fits in the step's time. The retry is
// the same run of the call: a side effect keeps its execution in the
// ledger and its idempotency key; CallOf's Try counts the tries. With no
// Retry, a Transient error is not retried.
func Retry(attempts int, backoff, maxBackoff time.Duration) ToolOption {
	return func(t *Tool) {
		if attempts < 0 || backoff < 0 || maxBackoff < 0 {
			t.Err = errors.Join(t.Err, errors.New("retry policy: negative attempts or backoff"))
		}
		t.Retry = tool.Retry{Attempts: attempts, Backoff: backoff, MaxBackoff: maxBackoff}
	}
}

// Transient marks err as a transient failure of a tool call that did not
// take effect: the runner retries the call by the tool's Retry policy, and
// when the tries run out the model sees the last error. A side-effecting
// tool must return it only when its effect did not happen, since the retry
// runs the effect again (with the same idempotency key).
func Transient(err error) error { return &tool.Error{Kind: tool.Transient, Err: err} }

// ForModel marks err as the call's result for the model to see: the turn
// goes on. It is what a plain error means too; use it to say so.
func ForModel(err error) error { return &tool.Error{Kind: tool.ForModel, Err: err} }

// Fatal marks err as fatal to the turn: the call gets err as its error
// result, and the turn fails (turn.failed, kind tool) with its message.
func Fatal(err error) error { return &tool.Error{Kind: tool.Fatal, Err: err} }

// DemoTools returns the demo agent's tools (get_weather, search_docs and
// send_email, which needs approval) and index_files, a read that takes a
// second and reports its progress with Emit. No agent has them but the
// embedded demo agent, unless a program passes them in Config.Tools, as
// the repository's own functions do so that test agent files may name
// them.
func DemoTools() []Tool { return append(tool.Demo(), tool.IndexFiles()) }
