package metrics

// Namespace is the CloudWatch namespace of every baton metric.
const Namespace = "Baton"

// Dimension keys.
const (
	DimFunction = "Function" // the Lambda function's name (AWS_LAMBDA_FUNCTION_NAME), or "local"
	DimAgent    = "Agent"    // the agent of the session
	DimCause    = "Cause"    // a suspension's cause
	DimKind     = "Kind"     // a failure's kind, or a model error's
	DimTool     = "Tool"     // a tool's name
	DimDecision = "Decision" // an approval's answer: approve or deny
	DimReason   = "Reason"   // why a wake was dropped
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units baton's metrics use.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	None         Unit = "None"
)

// Name is a metric's name. Its Unit and its Key (the dimension that says
// what kind, if any) are fixed by the name.
type Name string

// The metrics.
const (
	// Steps counts completed model steps; StepLatency is a step's time,
	// from its request to its parts; StepErrors counts tries of a step
	// that failed (a retry, a suspension or a failure follows).
	Steps       Name = "Steps"
	StepLatency Name = "StepLatency"
	StepErrors  Name = "StepErrors"
	// ModelCalls counts model calls (a step's, a compaction's);
	// ModelLatency is a call's time to its last event, TimeToFirstToken
	// to its first text, reasoning or tool call; ModelErrors counts calls
	// that ended in an error, by its kind (model.ErrorKind).
	ModelCalls       Name = "ModelCalls"
	ModelLatency     Name = "ModelLatency"
	TimeToFirstToken Name = "TimeToFirstToken"
	ModelErrors      Name = "ModelErrors"
	// InputTokens and OutputTokens are a model call's usage; CostMicroUSD
	// its cost at the agent's price (none without one), as the step's
	// metadata records it.
	InputTokens  Name = "InputTokens"
	OutputTokens Name = "OutputTokens"
	CostMicroUSD Name = "CostMicroUSD"
	// ToolCalls counts runs of a tool (its retries inside), ToolLatency
	// their time, ToolErrors those that returned an error.
	ToolCalls   Name = "ToolCalls"
	ToolLatency Name = "ToolLatency"
	ToolErrors  Name = "ToolErrors"
	// TurnsStarted, TurnsCompleted and Resumes count turn.started,
	// turn.completed and turn.resumed facts; Suspensions turn.suspended by
	// cause, Failures turn.failed by kind.
	TurnsStarted   Name = "TurnsStarted"
	TurnsCompleted Name = "TurnsCompleted"
	Resumes        Name = "Resumes"
	Suspensions    Name = "Suspensions"
	Failures       Name = "Failures"
	// WakeToResume is the time from a wake's send (its SQS SentTimestamp)
	// to the turn.resumed it led to, any delay it was sent with included.
	WakeToResume Name = "WakeToResume"
	// ApprovalsAnswered counts approval.answered facts by decision;
	// ApprovalWait is each one's time since its approval.requested.
	ApprovalsAnswered Name = "ApprovalsAnswered"
	ApprovalWait      Name = "ApprovalWait"
	// Reaps, ApprovalsExpired, Rewakes and TickErrors are a tick run's
	// report: turns found dead past their lease, approvals denied as
	// expired, lost wakes re-sent, sessions it failed to handle.
	Reaps            Name = "Reaps"
	ApprovalsExpired Name = "ApprovalsExpired"
	Rewakes          Name = "Rewakes"
	TickErrors       Name = "TickErrors"
	// WakesDropped counts SQS records the resume worker dropped, by
	// reason (invalid, unknown-session, unknown-agent); WakesRetried those
	// it handed back for redelivery (after the queue's maxReceiveCount SQS
	// moves one to the DLQ, whose depth the template's alarm watches).
	WakesDropped Name = "WakesDropped"
	WakesRetried Name = "WakesRetried"
)

// Names lists every metric baton emits.
func Names() []Name {
	return []Name{
		Steps, StepLatency, StepErrors,
		ModelCalls, ModelLatency, TimeToFirstToken, ModelErrors,
		InputTokens, OutputTokens, CostMicroUSD,
		ToolCalls, ToolLatency, ToolErrors,
		TurnsStarted, TurnsCompleted, Resumes, Suspensions, Failures,
		WakeToResume, ApprovalsAnswered, ApprovalWait,
		Reaps, ApprovalsExpired, Rewakes, TickErrors,
		WakesDropped, WakesRetried,
	}
}

// Unit is the metric's unit.
func (n Name) Unit() Unit {
	switch n {
	case StepLatency, ModelLatency, TimeToFirstToken, ToolLatency, WakeToResume, ApprovalWait:
		return Milliseconds
	case CostMicroUSD:
		return None
	}
	return Count
}

// Key is the dimension that says what kind of event the metric counts,
// or "" when it has none. A metric with a key is published per Function
// and per Function and key, besides per Function and Agent.
func (n Name) Key() string {
	switch n {
	case ModelErrors, Failures:
		return DimKind
	case ToolCalls, ToolLatency, ToolErrors:
		return DimTool
	case Suspensions:
		return DimCause
	case ApprovalsAnswered, ApprovalWait:
		return DimDecision
	case WakesDropped:
		return DimReason
	}
	return ""
}
