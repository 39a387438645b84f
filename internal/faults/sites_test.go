package faults_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

const (
	hello   = `{"steps":[{"text":"Hello."}]}`
	weather = `{"steps":[{"text":"Looking.","toolCalls":[{"name":"get_weather","input":{"city":"Oslo"}}]},{"text":"Sunny."}]}`
	charge  = `{"steps":[{"text":"Charging.","toolCalls":[{"name":"charge","input":{"amount":5}}]},{"text":"Charged."}]}`
)

const (
	putItems = "dynamodb:TransactWriteItems"
	putS3    = "s3:PutObject"
	send     = "sqs:SendMessage"
	// sendBatch is the tick's: it sends its wakes ten a request.
	sendBatch = "sqs:SendMessageBatch"
	// update is a write of one item; the tick's record of a re-sent wake.
	update = "dynamodb:UpdateItem"
)

// site is one durable write of the runner, the operator API or the tick.
type site struct {
	name   string
	op     string // the request that makes the write
	path   string // and its URL path holds this
	body   string // and its body holds this (a fact type)
	script string
	lim    turn.Limits
	setup  func(*stack, *testing.T) string
	act    func(*testing.T, *stack, string) result
	// landed checks the write happened, once, after a transient fault.
	landed func(*testing.T, *stack, string, result)
	// down checks the outcome under a persistent fault: the turn suspends,
	// or the request fails with 503, or the tick counts an error; no fact
	// is lost.
	down func(*testing.T, *stack, string, result)
}

func start(t *testing.T, s *stack, id string) result {
	out, err := s.runner.Start(t.Context(), id)
	return result{out: out, err: err}
}

func runTick(t *testing.T, s *stack, _ string) result {
	rep, err := s.tick.Run(t.Context())
	return result{rep: rep, err: err}
}

func post(path, body string) func(*testing.T, *stack, string) result {
	return func(_ *testing.T, s *stack, id string) result {
		code, b := s.do(http.MethodPost, strings.ReplaceAll(path, "{id}", id), body)
		return result{status: code, body: b}
	}
}

// once checks the run or request succeeded and the session has exactly one
// fact of typ.
func once(typ reducer.Type, kind turn.Kind, status int) func(*testing.T, *stack, string, result) {
	return func(t *testing.T, s *stack, id string, r result) {
		t.Helper()
		if r.err != nil || r.out.Kind != kind || r.status != status {
			t.Fatalf("%v; want kind %q status %d", r, kind, status)
		}
		if n := count(s.facts(t, id), typ); n != 1 {
			t.Fatalf("%d %s facts, want 1", n, typ)
		}
	}
}

// suspended checks the turn was suspended as throttled, and the facts end
// with the suspension after want.
func suspended(want ...reducer.Type) func(*testing.T, *stack, string, result) {
	return func(t *testing.T, s *stack, id string, r result) {
		t.Helper()
		if r.err != nil || r.out.Kind != turn.Suspended || r.out.Cause != reducer.CauseThrottled {
			t.Fatalf("%v; want suspended as throttled", r)
		}
		wantTypes(t, s.facts(t, id), append(want, reducer.TurnSuspended)...)
		if c := last(s.facts(t, id)).Cause; c != reducer.CauseThrottled {
			t.Fatalf("suspended for %q", c)
		}
	}
}

// unavailable checks the operator API answered 503 with a JSON message and
// the facts are as they were: want.
func unavailable(want ...reducer.Type) func(*testing.T, *stack, string, result) {
	return func(t *testing.T, s *stack, id string, r result) {
		t.Helper()
		var msg struct{ Error string }
		if r.status != http.StatusServiceUnavailable || json.Unmarshal([]byte(r.body), &msg) != nil || msg.Error == "" {
			t.Fatalf("%v; want 503 with a JSON message", r)
		}
		if id != "" {
			wantTypes(t, s.facts(t, id), want...)
		}
	}
}

// tickFailed checks the tick counted the session as an error for the next
// run, and the facts are as they were: want.
func tickFailed(want ...reducer.Type) func(*testing.T, *stack, string, result) {
	return func(t *testing.T, s *stack, id string, r result) {
		t.Helper()
		if r.err != nil || r.rep.Errors != 1 {
			t.Fatalf("%v; want one session in error", r)
		}
		wantTypes(t, s.facts(t, id), want...)
	}
}

func wantTypes(t *testing.T, fs []reducer.Fact, want ...reducer.Type) {
	t.Helper()
	var got []reducer.Type
	for _, f := range fs {
		got = append(got, f.Type)
	}
	if strings.Join(typeStrings(got), ",") != strings.Join(typeStrings(want), ",") {
		t.Fatalf("facts %v, want %v", got, want)
	}
}

func typeStrings(ts []reducer.Type) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

var (
	created = []reducer.Type{reducer.SessionCreated, reducer.MessageReceived}
	running = append(created, reducer.TurnStarted)
	waiting = append(running, reducer.ApprovalRequested, reducer.TurnSuspended)
	ended   = slices.Concat(waiting, []reducer.Type{reducer.TurnCancelled})
)

var sites = []site{
	{
		name: "runner: turn.started", op: putItems, body: `"turn.started"`, script: hello,
		setup: (*stack).session, act: start,
		landed: once(reducer.TurnStarted, turn.Completed, 0),
		down: func(t *testing.T, s *stack, id string, r result) {
			// No turn opened; the message waits, and the tick re-wakes it.
			if r.err == nil || !awsenv.Transient(r.err) {
				t.Fatalf("%v; want a transient error", r)
			}
			wantTypes(t, s.facts(t, id), created...)
			rewoken(t, s)
		},
	},
	{
		name: "runner: step chunk", op: putS3, path: "/streams/", script: weather,
		setup: (*stack).session, act: start,
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.TurnCompleted, turn.Completed, 0)(t, s, id, r)
			page, err := s.sessions.ReadStream(t.Context(), id, r.out.Turn, "")
			if err != nil {
				t.Fatal(err)
			}
			steps := 0
			for _, e := range page.Entries {
				if e.Part.Type == parts.StartStep {
					steps++
				}
			}
			if steps != 2 || page.Closed != streams.Completed {
				t.Fatalf("stream has %d steps, closed %q; want 2, completed", steps, page.Closed)
			}
		},
		down: suspended(running...),
	},
	{
		name: "runner: execution.started", op: putItems, body: `"execution.started"`, script: charge,
		setup: (*stack).session, act: start,
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.ExecutionStarted, turn.Completed, 0)(t, s, id, r)
			if n := s.runs.Load(); n != 1 {
				t.Fatalf("the side effect ran %d times", n)
			}
		},
		down: func(t *testing.T, s *stack, id string, r result) {
			suspended(running...)(t, s, id, r)
			if n := s.runs.Load(); n != 0 {
				t.Fatalf("the side effect ran %d times without its execution.started", n)
			}
		},
	},
	{
		name: "runner: turn.suspended", op: putItems, body: `"turn.suspended"`, script: weather,
		lim:   turn.Limits{MaxStepsPerInvocation: 1},
		setup: (*stack).session, act: start,
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.TurnSuspended, turn.Suspended, 0)(t, s, id, r)
			if r.out.Cause != reducer.CauseBudget {
				t.Fatalf("suspended for %q", r.out.Cause)
			}
		},
		down: func(t *testing.T, s *stack, id string, r result) {
			// Nothing can suspend it: the turn stays running under its
			// lease, for the reaper.
			if r.err == nil || !awsenv.Transient(r.err) {
				t.Fatalf("%v; want a transient error", r)
			}
			wantTypes(t, s.facts(t, id), running...)
			rep, err := s.tick.Run(t.Context())
			if err != nil || rep.Reaped != 1 {
				t.Fatalf("tick %+v, %v; want the turn reaped", rep, err)
			}
			wantTypes(t, s.facts(t, id), append(running, reducer.TurnSuspended)...)
		},
	},
	{
		name: "runner: completion snapshot", op: putS3, path: "/snapshots/", script: hello,
		setup: (*stack).session, act: start,
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.TurnCompleted, turn.Completed, 0)(t, s, id, r)
			if st := s.state(t, id); st.Status != reducer.Idle { // Load reads the snapshot
				t.Fatalf("status %s", st.Status)
			}
		},
		down: resumes(running...),
	},
	{
		name: "runner: turn.completed", op: putItems, body: `"turn.completed"`, script: hello,
		setup: (*stack).session, act: start,
		landed: once(reducer.TurnCompleted, turn.Completed, 0),
		down:   resumes(running...),
	},
	{
		name: "runner: wake after suspension", op: send, script: weather,
		lim:   turn.Limits{MaxStepsPerInvocation: 1},
		setup: (*stack).session, act: start,
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.TurnSuspended, turn.Suspended, 0)(t, s, id, r)
			if n := s.queued(t); n < 1 {
				t.Fatalf("%d wakes queued", n)
			}
		},
		down: func(t *testing.T, s *stack, id string, r result) {
			// The suspension is durable without its wake; the tick re-sends it.
			once(reducer.TurnSuspended, turn.Suspended, 0)(t, s, id, r)
			rewoken(t, s)
		},
	},
	{
		name: "operator: create session", op: putItems, body: `"session.created"`,
		setup: func(*stack, *testing.T) string { return "" },
		act:   post("/sessions", `{"agent":"demo"}`),
		landed: func(t *testing.T, s *stack, _ string, r result) {
			var v struct{ ID string }
			if r.status != http.StatusCreated || json.Unmarshal([]byte(r.body), &v) != nil || v.ID == "" {
				t.Fatalf("%v; want 201", r)
			}
			wantTypes(t, s.facts(t, v.ID), reducer.SessionCreated)
		},
		down: unavailable(),
	},
	{
		name: "operator: post message", op: putItems, body: `"message.received"`,
		setup: (*stack).started, act: post("/sessions/{id}/messages", `{"text":"more"}`),
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.TurnStarted, "", http.StatusAccepted)(t, s, id, r)
			wantTypes(t, s.facts(t, id), append(running, reducer.MessageReceived)...)
		},
		down: unavailable(running...),
	},
	{
		name: "operator: message wake", op: send,
		setup: (*stack).session, act: post("/sessions/{id}/messages", `{"text":"more"}`),
		landed: func(t *testing.T, s *stack, id string, r result) {
			once(reducer.SessionCreated, "", http.StatusAccepted)(t, s, id, r)
			if n := s.queued(t); n < 1 {
				t.Fatalf("%d wakes queued", n)
			}
		},
		down: func(t *testing.T, s *stack, id string, r result) {
			// The message is durable, so it is accepted; the tick re-sends
			// the wake.
			once(reducer.SessionCreated, "", http.StatusAccepted)(t, s, id, r)
			wantTypes(t, s.facts(t, id), append(created, reducer.MessageReceived)...)
			rewoken(t, s)
		},
	},
	{
		name: "operator: approval answer", op: putItems, body: `"approval.answered"`,
		setup: (*stack).awaitingApproval, act: post("/sessions/{id}/approvals/ap1", `{"decision":"approve"}`),
		landed: once(reducer.ApprovalAnswered, "", http.StatusAccepted),
		down:   unavailable(waiting...),
	},
	{
		name: "operator: cancel", op: putItems, body: `"turn.cancelled"`,
		setup: (*stack).awaitingApproval, act: post("/sessions/{id}/cancel", ``),
		landed: once(reducer.TurnCancelled, "", http.StatusAccepted),
		down:   unavailable(waiting...),
	},
	{
		name: "operator: cancel snapshot", op: putS3, path: "/snapshots/",
		setup: (*stack).awaitingApproval, act: post("/sessions/{id}/cancel", ``),
		landed: once(reducer.TurnCancelled, "", http.StatusAccepted),
		down:   unavailable(waiting...),
	},
	{
		name: "operator: rewind", op: putItems, body: `"session.rewound"`,
		setup: (*stack).ended, act: post("/sessions/{id}/rewind", `{"before":"t1"}`),
		landed: once(reducer.SessionRewound, "", http.StatusOK),
		down:   unavailable(ended...),
	},
	{
		name: "operator: rewind snapshot", op: putS3, path: "/snapshots/",
		setup: (*stack).ended, act: post("/sessions/{id}/rewind", `{"turn":"t1"}`),
		landed: once(reducer.SessionRewound, "", http.StatusOK),
		down:   unavailable(ended...),
	},
	{
		name: "operator: fork", op: putItems, body: `"session.rewound"`,
		setup: (*stack).ended, act: post("/sessions/{id}/fork", `{"turn":"t1"}`),
		landed: func(t *testing.T, s *stack, id string, r result) {
			var out struct{ Session string }
			if r.status != http.StatusCreated || json.Unmarshal([]byte(r.body), &out) != nil {
				t.Fatalf("%v; want 201", r)
			}
			wantTypes(t, s.facts(t, out.Session), reducer.SessionCreated, reducer.SessionRewound)
			wantTypes(t, s.facts(t, id), ended...)
		},
		down: unavailable(ended...),
	},
	{
		name: "operator: verdict", op: putItems, body: `"execution.verdict"`,
		setup: func(s *stack, t *testing.T) string {
			id := s.started(t)
			ex := &reducer.Execution{ID: "ex1", ToolCallID: "c1", Tool: "charge"}
			s.add(t, id, reducer.Fact{Type: reducer.ExecutionStarted, Actor: agent, Turn: "t1", Execution: ex},
				reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: "t1", Cause: reducer.CauseUncertain, Execution: ex})
			return id
		},
		act:    post("/sessions/{id}/executions/ex1", `{"verdict":"abandon"}`),
		landed: once(reducer.ExecutionVerdict, "", http.StatusAccepted),
		down:   unavailable(append(running, reducer.ExecutionStarted, reducer.TurnSuspended)...),
	},
	{
		name: "tick: reap", op: putItems, body: `"turn.suspended"`,
		setup: (*stack).started, act: runTick,
		landed: func(t *testing.T, s *stack, id string, r result) {
			if r.err != nil || r.rep.Reaped != 1 || r.rep.Errors != 0 {
				t.Fatalf("%v; want one reaped", r)
			}
			wantTypes(t, s.facts(t, id), append(running, reducer.TurnSuspended)...)
		},
		down: tickFailed(running...),
	},
	{
		name: "tick: expire", op: putItems, body: `"approval.answered"`,
		setup: (*stack).awaitingApproval, act: runTick,
		landed: func(t *testing.T, s *stack, id string, r result) {
			if r.err != nil || r.rep.Expired != 1 || r.rep.Errors != 0 {
				t.Fatalf("%v; want one expired", r)
			}
			wantTypes(t, s.facts(t, id), append(waiting, reducer.ApprovalAnswered)...)
		},
		down: tickFailed(waiting...),
	},
	{
		name: "tick: record the re-wake", op: update, body: `"rewoken"`,
		setup: (*stack).session, act: runTick,
		landed: func(t *testing.T, s *stack, id string, r result) {
			if r.err != nil || r.rep.Rewoken != 1 || r.rep.Errors != 0 || s.queued(t) != 1 {
				t.Fatalf("%v, %d queued; want the re-send recorded and one wake sent", r, s.queued(t))
			}
			wantTypes(t, s.facts(t, id), created...)
		},
		down: func(t *testing.T, s *stack, id string, r result) {
			tickFailed(created...)(t, s, id, r)
			if n := s.queued(t); n != 0 {
				t.Fatalf("%d wakes queued without the re-send recorded", n)
			}
		},
	},
	{
		name: "tick: re-wake", op: sendBatch,
		setup: (*stack).session, act: runTick,
		landed: func(t *testing.T, s *stack, id string, r result) {
			// A lost answer may leave a second copy on the queue: the
			// worker decides from the facts, so a duplicate is harmless.
			if r.err != nil || r.rep.Rewoken != 1 || r.rep.Errors != 0 || s.queued(t) < 1 {
				t.Fatalf("%v, %d queued; want one re-wake sent", r, s.queued(t))
			}
			wantTypes(t, s.facts(t, id), created...)
		},
		down: func(t *testing.T, s *stack, id string, r result) {
			tickFailed(created...)(t, s, id, r)
			if n := s.queued(t); n != 0 {
				t.Fatalf("%d wakes queued", n)
			}
		},
	},
}

// resumes checks a turn that could not record its ending was suspended as
// throttled, and that once the fault is gone it resumes and completes.
func resumes(want ...reducer.Type) func(*testing.T, *stack, string, result) {
	return func(t *testing.T, s *stack, id string, r result) {
		t.Helper()
		suspended(want...)(t, s, id, r)
		out, err := s.runner.Resume(t.Context(), id)
		if err != nil || out.Kind != turn.Completed {
			t.Fatalf("resume after the fault: %+v, %v", out, err)
		}
		wantTypes(t, s.facts(t, id), append(want, reducer.TurnSuspended, reducer.TurnResumed, reducer.TurnCompleted)...)
	}
}

// rewoken checks no wake is queued, and that the tick, the fault gone,
// sends one.
func rewoken(t *testing.T, s *stack) {
	t.Helper()
	if n := s.queued(t); n != 0 {
		t.Fatalf("%d wakes queued under a persistent fault", n)
	}
	rep, err := s.tick.Run(t.Context())
	if err != nil || rep.Rewoken != 1 || s.queued(t) != 1 {
		t.Fatalf("tick %+v, %v, %d queued; want the wake re-sent", rep, err, s.queued(t))
	}
}

// fault is one column of the table.
type fault struct {
	name       string
	times      int // 0: persistent
	kind       func(op string) faults.Kind
	persistent bool
}

func throttle(op string) faults.Kind {
	switch {
	case strings.HasPrefix(op, "s3:"):
		return faults.SlowDown
	case strings.HasPrefix(op, "sqs:"):
		return faults.Throttling
	}
	return faults.Throughput
}

func fixed(k faults.Kind) func(string) faults.Kind { return func(string) faults.Kind { return k } }

var columns = []fault{
	{name: "throttle", times: 2, kind: throttle},
	{name: "500", times: 2, kind: fixed(faults.ServerError)},
	{name: "timeout", times: 2, kind: fixed(faults.Timeout)},
	{name: "lost response", times: 1, kind: fixed(faults.LostResponse)},
	{name: "persistent throttle", kind: throttle, persistent: true},
}

// TestWriteSitesUnderFaults runs every durable write of the runner, the
// operator API and the tick under every fault, through the fault transport
// in front of the emulator.
func TestWriteSitesUnderFaults(t *testing.T) {
	for _, st := range sites {
		for _, col := range columns {
			t.Run(st.name+"/"+col.name, func(t *testing.T) {
				t.Parallel()
				script := st.script
				if script == "" {
					script = hello
				}
				s := newStack(t, script, st.lim)
				id := st.setup(s, t)
				s.ft.Set(faults.Rule{Op: st.op, Path: st.path, Body: st.body, Times: col.times, Fault: col.kind(st.op)})
				r := st.act(t, s, id)
				s.ft.Set()
				n := s.ft.Count(st.op)
				switch {
				case col.persistent && n < 3:
					t.Fatalf("%d faults injected, want the SDK's attempts at least", n)
				case !col.persistent && n != col.times:
					t.Fatalf("%d faults injected, want %d", n, col.times)
				}
				if col.persistent {
					st.down(t, s, id, r)
				} else {
					st.landed(t, s, id, r)
				}
			})
		}
	}
}
