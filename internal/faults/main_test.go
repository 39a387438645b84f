package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// shared is the emulator and the bucket the package's tests share; each
// stack takes a table and a queue of its own.
var shared testenv.Env

var emu = testenv.Emulator()

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &shared)) }

// stack is one test's table, queue and the parts of baton that write to
// them, all talking to the emulator through one fault transport.
type stack struct {
	ft       *faults.Transport
	sessions *session.Store
	queue    string
	sqs      *sqs.Client
	runner   *turn.Runner
	api      http.Handler
	tick     *tick.Tick
	runs     *atomic.Int32 // runs of the side-effecting tool
}

func newStack(t *testing.T, script string, lim turn.Limits) *stack {
	t.Helper()
	ft := faults.New(nil)
	cl := faults.Clients(emu.URL, ft)
	e := testenv.New(t)
	ss := teststack.Sessions(cl, e)
	waker := ss.Waker
	s := &stack{ft: ft, sessions: ss, queue: e.QueueURL, sqs: cl.SQS, runs: &atomic.Int32{}}
	m, err := model.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	charge := tool.Tool{
		Name: "charge", Description: "Charge a card.", Effect: tool.Write,
		Schema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
		Run: func(context.Context, tool.Call) (json.RawMessage, error) {
			s.runs.Add(1)
			return json.RawMessage(`{"charged":true}`), nil
		},
	}
	reg, err := tool.NewRegistry(append(tool.Demo(), charge)...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "test", Model: m, Tools: reg, MaxTokens: 256, Limits: lim}
	s.runner = &turn.Runner{Sessions: ss, Agents: turn.AgentMap{"demo": agent}, Waker: waker}
	s.api = operator.New(operator.Config{Sessions: ss, Agents: func(n string) bool { return n == "demo" },
		Identity: func(*http.Request) (string, bool) { return "alice", true }})
	// The tick looks an hour ahead: leases, approvals and wakes are overdue.
	s.tick = &tick.Tick{Sessions: ss, Waker: waker, Now: func() time.Time { return time.Now().Add(time.Hour) }}
	return s
}

var alice = teststack.Alice

// session creates a session with a waiting message.
func (s *stack) session(t *testing.T) string {
	t.Helper()
	id := ids.New("s")
	if _, err := s.sessions.Create(t.Context(), id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	s.add(t, id, reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &reducer.Message{ID: ids.New("m"), Text: "hi"}})
	return id
}

// add appends facts to the session as they are.
func (s *stack) add(t *testing.T, id string, facts ...reducer.Fact) {
	t.Helper()
	sess, err := s.sessions.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.sessions.Append(t.Context(), id, sess.State, facts...); err != nil {
		t.Fatal(err)
	}
}

// started opens turn "t1" on a new session, its lease ending in a minute.
func (s *stack) started(t *testing.T) string {
	t.Helper()
	id := s.session(t)
	s.add(t, id, reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: "t1", Stream: "t1", Lease: time.Now().Add(time.Minute)})
	return id
}

var agent = reducer.Actor{Kind: reducer.ActorAgent, ID: "t1"}

// awaitingApproval is a session whose turn waits for approval "ap1",
// expiring in a minute.
func (s *stack) awaitingApproval(t *testing.T) string {
	t.Helper()
	id := s.started(t)
	s.add(t, id,
		reducer.Fact{Type: reducer.ApprovalRequested, Actor: agent, Turn: "t1", Approval: &reducer.Approval{
			ID: "ap1", ToolCallID: "c1", Tool: "send_email", Input: json.RawMessage(`{"to":"x","subject":"y"}`), Expires: time.Now().Add(time.Minute)}},
		reducer.Fact{Type: reducer.TurnSuspended, Actor: agent, Turn: "t1", Cause: reducer.CauseApproval})
	return id
}

// ended is awaitingApproval's session with turn "t1" cancelled.
func (s *stack) ended(t *testing.T) string {
	t.Helper()
	id := s.awaitingApproval(t)
	if err := s.sessions.Cancel(t.Context(), id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, "setup"); err != nil {
		t.Fatal(err)
	}
	return id
}

func (s *stack) facts(t *testing.T, id string) []reducer.Fact {
	t.Helper()
	fs := teststack.Facts(t, s.sessions, id)
	for i, f := range fs {
		if f.Seq != int64(i+1) {
			t.Fatalf("facts are not dense: fact %d has seq %d", i, f.Seq)
		}
	}
	return fs
}

func (s *stack) state(t *testing.T, id string) reducer.State {
	t.Helper()
	return teststack.Load(t, s.sessions, id)
}

// do sends an operator API request and returns the status and body.
func (s *stack) do(method, path, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	s.api.ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// queued counts the wakes on the queue.
func (s *stack) queued(t *testing.T) int {
	t.Helper()
	return teststack.Visible(t, emu.Clients.SQS, s.queue)
}

var count = teststack.Count

func last(fs []reducer.Fact) reducer.Fact { return fs[len(fs)-1] }

// result is what an act returned.
type result struct {
	out    turn.Outcome
	err    error
	status int
	body   string
	rep    tick.Report
}

func (r result) String() string {
	return fmt.Sprintf("outcome %+v err %v status %d body %s report %+v", r.out, r.err, r.status, r.body, r.rep)
}
