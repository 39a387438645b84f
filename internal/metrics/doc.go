// Package metrics writes baton's metrics as CloudWatch Embedded Metric
// Format (EMF): each is a JSON log line with an _aws member, written to the
// function's log output (stdout or stderr in Lambda, which CloudWatch Logs
// turns into metrics of the Namespace). No CloudWatch API is called.
//
// One Recorder does all of it. Its Interceptor (package intercept) times
// model calls (latency, time to first token, tokens, cost), tool calls and
// steps, and decorates the fact log, so every fact appended by any writer
// (the runner, the operator API, the tick) counts: turns started,
// completed and resumed, suspensions by cause, failures by kind, approvals
// answered with their wait (approval.requested to approval.answered, from
// the facts' times), and the time from a wake's send (the SQS
// SentTimestamp the worker puts in the context, WithWakeSent) to the turn
// resuming. The few points that are no call are direct: the tick's report
// (reaps, expiries, re-sent wakes, errors) and the worker's dropped and
// redelivered wakes.
//
// Metric names, units, dimension keys and the namespace are defined here
// once (Metrics, Namespace); template.yaml's dashboard and alarms are
// checked against them. Dimensions are few and small: Function (the Lambda
// function's name), Agent where known, and one key per metric where it
// says what kind (Cause, Kind, Tool, Decision, Reason); never a session id.
//
// A nil *Recorder records nothing and costs nothing: every method returns
// at once, and a program without one adds no interceptor.
package metrics
