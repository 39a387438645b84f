package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// pokeScript is a two-step turn: a call of poke, then an answer. The
// scripted model plays the step the conversation reached since the last
// user message, so a message steered in after the poke step starts the
// script over: the model pokes again (poke posts only once), then answers.
const pokeScript = `{"steps":[
 {"text":"Poking.","toolCalls":[{"name":"poke","input":{}}]},
 {"text":"Done."}
]}`

const interjection = "Also look at Oslo."

// recording is a model that keeps the input of every step it is asked.
type recording struct {
	m    model.Model
	mu   sync.Mutex
	reqs [][]conversation.Message
}

func (r *recording) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Messages)
	r.mu.Unlock()
	return r.m.Stream(ctx, req)
}

func (r *recording) requests() [][]conversation.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slicesClone(r.reqs)
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

// poker is the poke tool: its first run posts interjection to the session
// through the session store, so the message arrives in the middle of the
// turn, between its steps; later runs only answer.
type poker struct {
	ss   *session.Store
	id   string
	mu   sync.Mutex
	runs int
	msg  string // the posted message's id
	err  error  // what the post returned
}

func (p *poker) tool() tool.Tool {
	return tool.Tool{Name: "poke", Description: "Pokes.", Effect: tool.Read,
		Run: func(ctx context.Context, _ tool.Call) (json.RawMessage, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.runs++; p.runs == 1 {
				p.msg, p.err = p.ss.Post(ctx, p.id, teststack.Alice, interjection)
			}
			return json.RawMessage(`"poked"`), nil
		}}
}

// steerAgent is the agent "demo" with the demo tools and poke, under policy.
func steerAgent(t *testing.T, m model.Model, p *poker, policy reducer.Steering, lim turn.Limits) *turn.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(append(tool.Demo(), p.tool())...)
	if err != nil {
		t.Fatal(err)
	}
	return &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024, Limits: lim, Steering: policy}
}

// steering is an invocation whose session store applies the agent's policy.
func steering(t testing.TB, agent *turn.Agent) *invocation {
	inv := fresh(t, agent)
	inv.sessions.Steering = turn.AgentMap{agent.Name: agent}.Steering
	return inv
}

// received returns the message.received fact of message id.
func received(t *testing.T, fs []reducer.Fact, id string) reducer.Fact {
	t.Helper()
	for _, f := range fs {
		if f.Type == reducer.MessageReceived && f.Message.ID == id {
			return f
		}
	}
	t.Fatalf("no message.received for %s in %v", id, types(fs))
	return reducer.Fact{}
}

// userTexts are the texts of the user messages of an input.
func userTexts(msgs []conversation.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == conversation.User {
			for _, c := range m.Content {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

func TestSteeringEnqueueStartsTheNextTurn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	rec := &recording{m: script(t, pokeScript)}
	p := &poker{}
	inv := steering(t, steerAgent(t, rec, p, reducer.SteerEnqueue, turn.Limits{}))
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id

	out, err := inv.runner.Start(ctx, id)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	if out.Kind != turn.Completed || out.Steps != 2 || out.Waiting != 1 {
		t.Fatalf("first turn = %+v, want completed in 2 steps with 1 message waiting", out)
	}
	fs := facts(t, inv, id)
	if d := received(t, fs, p.msg).Message.Delivery; d != reducer.SteerEnqueue {
		t.Fatalf("delivery = %q, want enqueue", d)
	}
	for _, req := range rec.requests() {
		if strings.Contains(strings.Join(userTexts(req), "|"), interjection) {
			t.Fatal("the first turn's model saw the queued message")
		}
	}
	out2, err := inv.runner.Start(ctx, id)
	if err != nil || out2.Kind != turn.Completed {
		t.Fatalf("second turn = %+v, %v", out2, err)
	}
	fs = facts(t, inv, id)
	for _, f := range fs {
		if f.Type == reducer.TurnStarted && f.Turn == out2.Turn {
			st, _ := reducer.Reduce(fs[:f.Seq])
			if len(st.Turn.Messages) != 1 || st.Turn.Messages[0].ID != p.msg {
				t.Fatalf("the second turn answers %+v, want the posted message", st.Turn.Messages)
			}
		}
	}
	if n := count(fs, reducer.MessageSteered); n != 0 {
		t.Fatalf("%d message.steered facts under enqueue", n)
	}
}

func TestSteeringSteerDeliversIntoTheRunningTurn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	rec := &recording{m: script(t, pokeScript)}
	p := &poker{}
	inv := steering(t, steerAgent(t, rec, p, reducer.SteerSteer, turn.Limits{}))
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id

	out, err := inv.runner.Start(ctx, id)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	// Poke, then (the script over) poke again and answer.
	if out.Kind != turn.Completed || out.Steps != 3 || out.Waiting != 0 {
		t.Fatalf("turn = %+v, want completed in 3 steps with nothing waiting", out)
	}
	reqs := rec.requests()
	if got := userTexts(reqs[0]); !reflect.DeepEqual(got, []string{"Poke it."}) {
		t.Fatalf("first step's user messages %q", got)
	}
	// The model's next request after the message arrived ends with it, as
	// a user message after the poke step's result.
	next := reqs[1]
	last := next[len(next)-1]
	if last.Role != conversation.User || last.Content[0].Text != interjection || next[len(next)-2].Role != conversation.ToolRole {
		t.Fatalf("second step's input ends %+v, want the tool result then the steered message", next[len(next)-2:])
	}
	if got := strings.Count(strings.Join(userTexts(reqs[2]), "|"), interjection); got != 1 {
		t.Fatalf("third step's input holds the steered message %d times", got)
	}

	fs := facts(t, inv, id)
	want := []reducer.Type{reducer.SessionCreated, reducer.MessageReceived, reducer.TurnStarted,
		reducer.MessageReceived, reducer.MessageSteered, reducer.TurnCompleted}
	if got := types(fs); !reflect.DeepEqual(got, want) {
		t.Fatalf("facts = %v, want %v", got, want)
	}
	if m := fs[3].Message; m.ID != p.msg || m.Delivery != reducer.SteerSteer {
		t.Fatalf("message.received = %+v, want %s delivered by steer", m, p.msg)
	}
	if s := fs[4]; !reflect.DeepEqual(s.Steered, []string{p.msg}) || s.Turn != out.Turn || s.Actor.Kind != reducer.ActorAgent {
		t.Fatalf("message.steered = %+v", s)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	n := 0
	for _, p := range ps {
		if p.Type == parts.DataSteered {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d data-steered parts, want 1", n)
	}
	// The ended turn's snapshot holds the message where the model saw it.
	if got := strings.Count(string(transcript(t, inv, id)), interjection); got != 1 {
		t.Fatalf("the history holds the steered message %d times", got)
	}
}

// dieOn is a transport in front of the emulator that kills the invocation
// (cancels its context) at the first DynamoDB request whose body holds
// marker, before sending it: the process died just before that write.
type dieOn struct {
	marker string
	kill   context.CancelFunc
	once   sync.Once
	died   bool
}

func (d *dieOn) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && strings.Contains(req.Header.Get("X-Amz-Target"), "DynamoDB") {
		body, err := readAll(req)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(body, []byte(d.marker)) {
			d.once.Do(func() { d.died = true; d.kill() })
			return nil, context.Canceled
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func readAll(req *http.Request) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(req.Body); err != nil {
		return nil, err
	}
	_ = req.Body.Close()
	body := b.Bytes()
	req.Body = ioNopCloser(bytes.NewReader(body))
	return body, nil
}

// A crash after the data-steered part is flushed and before message.steered
// is recorded: the resumed invocation rebuilds the input the durable state
// holds, with the message once, records message.steered, and goes on.
func TestSteeringSteerSurvivesACrashBeforeTheFact(t *testing.T) {
	t.Parallel()
	onEmulator(t) // counts requests, injects faults or reads the queue
	ctx := ctxT(t)
	lim := turn.Limits{LeaseGrace: time.Millisecond}
	p := &poker{}
	dying, kill := context.WithCancel(context.Background())
	defer kill()
	die := &dieOn{marker: string(reducer.MessageSteered), kill: kill}
	agent := steerAgent(t, script(t, pokeScript), p, reducer.SteerSteer, lim)
	inv := steering(t, agent)
	// The dying invocation's stores reach the emulator through die.
	dyingSessions := teststack.Sessions(faults.Clients(env.URL(), faults.New(die)), env)
	dyingSessions.Steering = inv.sessions.Steering
	dyingRunner := &turn.Runner{Sessions: dyingSessions, Agents: turn.AgentMap{"demo": agent}, Waker: dyingSessions.Waker}
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id

	out, err := dyingRunner.Start(dying, id)
	if !die.died || !errors.Is(err, context.Canceled) {
		t.Fatalf("dying invocation: %+v, %v (died %v)", out, err, die.died)
	}
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tr := sess.State.Turn; sess.State.Status != reducer.Running || len(tr.Steer) != 1 || tr.Steer[0].ID != p.msg {
		t.Fatalf("after the crash: %s, steer %+v; want running with the message waiting", sess.State.Status, tr.Steer)
	}
	ps, _ := readParts(t, inv, id, out.Turn)
	if d := conversation.Replay(ps).Delivered(); len(d) != 1 || d[0].ID != p.msg {
		t.Fatalf("the stream delivered %+v, want the message (flushed before the crash)", d)
	}
	before := transcript(t, inv, id)

	// A fresh invocation, once the dead one's lease ran out.
	var resumed *invocation
	rec := &recording{m: script(t, pokeScript)}
	check := &checking{t: t, m: rec, inv: func() *invocation { return resumed }, id: id}
	resumed = steering(t, steerAgent(t, check, p, reducer.SteerSteer, lim))
	resumed.sessions.Now = func() time.Time { return time.Now().Add(time.Until(sess.State.Turn.Lease) + time.Second) }
	out, err = resumed.runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume: %+v, %v", out, err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("the resumed invocation asked %d steps, want 2", len(reqs))
	}
	// The first step's input is what the durable state rebuilt before it,
	// byte for byte (checking compares every step's), and has the message once.
	got, _ := json.Marshal(reqs[0])
	if !bytes.Equal(got, before) {
		t.Fatalf("resumed input\n%s\nwant the durable state's\n%s", got, before)
	}
	if n := strings.Count(string(got), interjection); n != 1 {
		t.Fatalf("the resumed input holds the message %d times", n)
	}
	fs := facts(t, inv, id)
	if n := count(fs, reducer.MessageSteered); n != 1 {
		t.Fatalf("%d message.steered facts, want 1", n)
	}
	ps, _ = readParts(t, inv, id, out.Turn)
	n := 0
	for _, p := range ps {
		if p.Type == parts.DataSteered {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d data-steered parts, want 1: the message was delivered again", n)
	}
}

func TestSteeringInterruptEndsTheTurnAndStartsANewOne(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	rec := &recording{m: script(t, pokeScript)}
	p := &poker{}
	inv := steering(t, steerAgent(t, rec, p, reducer.SteerInterrupt, turn.Limits{}))
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id

	out, err := inv.runner.Start(ctx, id)
	if err != nil || p.err != nil {
		t.Fatal(err, p.err)
	}
	if out.Kind != turn.Interrupted || out.Steps != 1 || out.Waiting != 1 {
		t.Fatalf("turn = %+v, want interrupted after 1 step with the message waiting", out)
	}
	fs := facts(t, inv, id)
	want := []reducer.Type{reducer.SessionCreated, reducer.MessageReceived, reducer.TurnStarted,
		reducer.MessageReceived, reducer.TurnInterrupted}
	if got := types(fs); !reflect.DeepEqual(got, want) {
		t.Fatalf("facts = %v, want %v", got, want)
	}
	if d := fs[3].Message.Delivery; d != reducer.SteerInterrupt {
		t.Fatalf("delivery = %q, want interrupt", d)
	}
	if e := fs[4]; e.Snapshot == "" || e.Usage == nil || e.Usage.Steps != 1 || e.Turn != out.Turn {
		t.Fatalf("turn.interrupted = %+v", e)
	}
	if _, closed := readParts(t, inv, id, out.Turn); closed != streams.Interrupted {
		t.Fatalf("stream closed %q, want interrupted", closed)
	}
	next, err := inv.runner.Start(ctx, id)
	if err != nil || next.Kind != turn.Completed {
		t.Fatalf("next turn = %+v, %v", next, err)
	}
	reqs := rec.requests()
	if got := userTexts(reqs[1]); !reflect.DeepEqual(got, []string{"Poke it.", interjection}) {
		t.Fatalf("the new turn's first input has user messages %q, want the old one then the interjection", got)
	}
}

// An interrupt must not wait behind an approval: posting it to a turn
// suspended for one ends the turn in the same write.
func TestSteeringInterruptEndsASuspendedTurn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	agent := steerAgent(t, script(t, approvalScript), &poker{}, reducer.SteerInterrupt, turn.Limits{})
	inv := steering(t, agent)
	id := newSession(t, inv, "Email the team.")
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval {
		t.Fatalf("first invocation = %+v, %v", out, err)
	}
	msg, err := inv.sessions.Post(ctx, id, teststack.Alice, "Never mind.")
	if err != nil {
		t.Fatal(err)
	}
	fs := facts(t, inv, id)
	last, prev := fs[len(fs)-1], fs[len(fs)-2]
	if prev.Type != reducer.MessageReceived || prev.Message.Delivery != reducer.SteerInterrupt ||
		last.Type != reducer.TurnInterrupted || last.Actor != teststack.Alice || last.Snapshot == "" {
		t.Fatalf("last facts %+v, %+v", prev, last)
	}
	if _, closed := readParts(t, inv, id, out.Turn); closed != streams.Interrupted {
		t.Fatalf("stream closed %q, want interrupted", closed)
	}
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.State.Status != reducer.Idle || len(sess.State.Inbox) != 1 || sess.State.Inbox[0].ID != msg {
		t.Fatalf("state %+v", sess.State)
	}
	// The unanswered call has a result in the history, so no call dangles.
	if !strings.Contains(string(transcript(t, inv, id)), "the turn was interrupted") {
		t.Fatal("the snapshot lacks the unresolved result of the pending call")
	}
}

func TestSteeringRejectRefusesWithoutAFact(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	p := &poker{}
	inv := steering(t, steerAgent(t, script(t, pokeScript), p, reducer.SteerReject, turn.Limits{}))
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id
	out, err := inv.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Completed || out.Steps != 2 {
		t.Fatalf("turn = %+v, %v", out, err)
	}
	if !errors.Is(p.err, session.ErrRejected) || p.msg != "" {
		t.Fatalf("post during the turn: %q, %v; want ErrRejected", p.msg, p.err)
	}
	if n := count(facts(t, inv, id), reducer.MessageReceived); n != 1 {
		t.Fatalf("%d message.received facts, want only the first", n)
	}
	// With no turn open the message is taken.
	if _, err := inv.sessions.Post(ctx, id, teststack.Alice, "Again."); err != nil {
		t.Fatal(err)
	}
}

func ioNopCloser(r *bytes.Reader) io.ReadCloser { return io.NopCloser(r) }

const weatherScript = `{"steps":[
 {"text":"Checking.","toolCalls":[{"name":"get_weather","input":{"city":"Paris"}}]},
 {"text":"Done."}
]}`

// A message steered at a suspended turn waits for the resume, which
// delivers it before its first step.
func TestSteeringSteerWaitsForTheResume(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	first := steering(t, steerAgent(t, script(t, weatherScript), &poker{}, reducer.SteerSteer, turn.Limits{MaxStepsPerInvocation: 1}))
	id := newSession(t, first, "Weather?")
	out, err := first.runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseBudget {
		t.Fatalf("first invocation = %+v, %v", out, err)
	}
	msg, err := first.sessions.Post(ctx, id, teststack.Alice, interjection)
	if err != nil {
		t.Fatal(err)
	}
	if st := teststack.Load(t, first.sessions, id); st.Status != reducer.Suspended || len(st.Turn.Steer) != 1 || st.Turn.Steer[0].ID != msg {
		t.Fatalf("after the post: %s, steer %+v", st.Status, st.Turn.Steer)
	}
	rec := &recording{m: script(t, weatherScript)}
	second := steering(t, steerAgent(t, rec, &poker{}, reducer.SteerSteer, turn.Limits{}))
	out, err = second.runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume = %+v, %v", out, err)
	}
	reqs := rec.requests()
	if got := userTexts(reqs[0]); !reflect.DeepEqual(got, []string{"Weather?", interjection}) {
		t.Fatalf("the resumed step's user messages %q", got)
	}
	fs := facts(t, second, id)
	if n := count(fs, reducer.MessageSteered); n != 1 {
		t.Fatalf("%d message.steered facts, want 1", n)
	}
}

// A message to steer in that arrives when the turn has no step left (here
// its cap of one step) is not delivered into it: the turn ends as its caps
// say, and the message starts the next turn, where the model answers it.
func TestSteeringMessageTheTurnHasNoStepForStartsTheNext(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	p := &poker{}
	agent := steerAgent(t, script(t, pokeScript), p, reducer.SteerSteer, turn.Limits{MaxStepsPerTurn: 1})
	inv := steering(t, agent)
	p.ss = inv.sessions
	id := newSession(t, inv, "Poke it.")
	p.id = id
	out, err := inv.runner.Start(ctx, id)
	if err != nil || p.err != nil || out.Kind != turn.Failed || out.Failure.Kind != reducer.FailLimit || out.Waiting != 1 {
		t.Fatalf("capped turn: %+v, %v (post: %v)", out, err, p.err)
	}
	fs := facts(t, inv, id)
	if n := count(fs, reducer.MessageSteered); n != 0 {
		t.Fatalf("%d message.steered facts for a turn with no step left", n)
	}
	if d := received(t, fs, p.msg).Message.Delivery; d != reducer.SteerSteer {
		t.Fatalf("the message was received as %q", d)
	}
	sess, err := inv.sessions.Load(ctx, id)
	if err != nil || len(sess.State.Inbox) != 1 || sess.State.Inbox[0].ID != p.msg {
		t.Fatalf("the inbox after the turn: %v, %+v", err, sess.State.Inbox)
	}
	rec := &recording{m: script(t, `{"steps":[{"text":"Oslo it is."}]}`)}
	next := steering(t, steerAgent(t, rec, p, reducer.SteerSteer, turn.Limits{}))
	if out, err := next.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("the next turn: %+v, %v", out, err)
	}
	if texts := userTexts(rec.requests()[0]); texts[len(texts)-1] != interjection {
		t.Fatalf("the next turn answers %q, want the message", texts)
	}
}
