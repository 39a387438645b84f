// Package wake sends and parses the SQS messages that wake a session, each
// with a typed Reason: a resume handler receives one, and decides what to
// do from the session's facts, never from the message, since SQS may
// deliver it late or twice. Notify is the best-effort send every writer
// uses after a durable fact. A wake may carry a W3C traceparent (Trace):
// the turn's, or the sending request's. The SAM template declares the queue and its
// dead-letter queue.
package wake
