// Package intercept is baton's one seam around the calls a turn makes:
// model calls, tool calls, steps, and calls to storage. An Interceptor
// wraps each kind of call it cares about, in the style of Temporal's
// interceptors: a function that takes the next handler and returns one
// that may act before and after calling it (or not call it at all). A
// tracer or a metrics recorder is then one Interceptor, not an edit
// across packages.
//
//   - Run wraps every invocation's run of a turn, a start or a resume,
//     with the turn's trace context (see package traceparent): its steps,
//     model calls and tool calls are inside it.
//   - Model wraps every model call: one step's request and its stream of
//     events (a summariser's compaction request too, with Step 0).
//   - Tool wraps every run of a tool, retries included.
//   - Step wraps every model step of a turn, from its request to the
//     parts it produced; the step's model call is inside it.
//   - Facts and Streams decorate the fact log and the stream store a
//     session.Store is built on (see session.Store.Decorate), so they see
//     every call the session layer makes to storage: loads, appends,
//     head and due reads, stream opens, resumes and reads, and each chunk
//     write (every flush and close) of the sinks the store hands out,
//     which write through StreamStore.WriteChunk.
//   - Claims decorates the resource claims broker the runner and the
//     session store share (see Claims), so it sees every acquire, release,
//     withdrawal and listing of claims.
//
// Interceptors are configured on host.Config (Interceptors, app.Config
// inside), or directly on turn.Runner (runs, model, tool and step calls),
// with Store (store calls) and with Claims (broker calls). The first
// interceptor of a list is the outermost. With none configured, nothing is
// added on the hot path: the runner calls the model, the tools and its step
// directly.
package intercept
