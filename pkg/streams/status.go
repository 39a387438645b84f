package streams

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
