package streams

import "github.com/baton-run/baton/pkg/parts"

// PartType names a stream part; see parts.Type.
type PartType = parts.Type

// Part is one protocol part; see parts.Part.
type Part = parts.Part

// Part types, as in package parts.
const (
	Start                = parts.Start
	StartStep            = parts.StartStep
	ReasoningStart       = parts.ReasoningStart
	ReasoningDelta       = parts.ReasoningDelta
	ReasoningEnd         = parts.ReasoningEnd
	TextStart            = parts.TextStart
	TextDelta            = parts.TextDelta
	TextEnd              = parts.TextEnd
	ToolInputAvailable   = parts.ToolInputAvailable
	ToolApprovalRequest  = parts.ToolApprovalRequest
	ToolApprovalResponse = parts.ToolApprovalResponse
	ToolOutputAvailable  = parts.ToolOutputAvailable
	ToolOutputError      = parts.ToolOutputError
	ToolOutputDenied     = parts.ToolOutputDenied
	MessageMetadata      = parts.MessageMetadata
	FinishStep           = parts.FinishStep
	Finish               = parts.Finish
	Error                = parts.Error
	DataSuspended        = parts.DataSuspended
	DataResumed          = parts.DataResumed
	DataAbandoned        = parts.DataAbandoned
	DataCompacted        = parts.DataCompacted
	DataSteered          = parts.DataSteered
)

// Status is how a stream was closed. The empty Status means open.
type Status string

// Close statuses.
const (
	Open      Status = ""
	Completed Status = "completed"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
	// Interrupted: a message received under the interrupt policy ended
	// the turn.
	Interrupted Status = "interrupted"
	Aborted     Status = "aborted" // closed by a writer that lost its race
)
