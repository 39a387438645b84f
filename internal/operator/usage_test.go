package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// streamUsage sums the usage in the message-metadata of a turn's stream.
func streamUsage(t *testing.T, e *env, id, stream string) reducer.Usage {
	t.Helper()
	page, err := e.store.ReadStream(t.Context(), id, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	var u reducer.Usage
	for _, en := range page.Entries {
		if en.Part.Type != parts.MessageMetadata {
			continue
		}
		var m struct {
			Usage reducer.Usage `json:"usage"`
		}
		if err := json.Unmarshal(en.Part.MessageMetadata, &m); err != nil {
			t.Fatal(err)
		}
		if m.Usage.Steps != 1 {
			t.Fatalf("a step's message-metadata says steps %d, want 1: %s", m.Usage.Steps, en.Part.MessageMetadata)
		}
		u = u.Add(m.Usage)
	}
	return u
}

// A session's usage counts its open turn's steps as its last suspension
// recorded them, and counts each step once when the turn ends.
func TestSessionUsageIncludesTheOpenTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Weather, five times."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two two","toolCalls":[{"name":"get_weather","input":{"city":"B"}}]},
 {"text":"three three three","toolCalls":[{"name":"get_weather","input":{"city":"C"}}]},
 {"text":"four","toolCalls":[{"name":"get_weather","input":{"city":"D"}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024,
		Limits: turn.Limits{MaxStepsPerInvocation: 2}}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	out, err := runner.Start(t.Context(), s.ID)
	if err != nil || out.Kind != turn.Suspended || out.Steps != 2 {
		t.Fatalf("start: %+v, %v", out, err)
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want := streamUsage(t, e, s.ID, out.Turn)
	if want.Steps != 2 || want.InputTokens == 0 || want.OutputTokens == 0 {
		t.Fatalf("stream usage after two steps = %+v", want)
	}
	if got.Usage != want {
		t.Fatalf("session usage mid-turn = %+v, want the stream's %+v", got.Usage, want)
	}
	for out.Kind == turn.Suspended {
		if out, err = runner.Resume(t.Context(), s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if out.Kind != turn.Completed {
		t.Fatalf("resume: %+v", out)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	want = streamUsage(t, e, s.ID, out.Turn)
	if want.Steps != 5 || got.Usage != want || out.Usage != want {
		t.Fatalf("usage after the turn: session %+v, outcome %+v, want the stream's %+v", got.Usage, out.Usage, want)
	}
}

// countStreams makes the API read streams through counter.
func countStreams(counter *awsenv.Counter) func(*operator.Config) {
	return streamsThrough(faults.New(counter))
}

// streamsThrough makes the API's session store reach S3 through ft.
func streamsThrough(ft *faults.Transport) func(*operator.Config) {
	return func(c *operator.Config) {
		s3 := streams.New(faults.Clients(shared.URL(), ft).S3, shared.Bucket)
		c.Sessions = c.Sessions.Decorate(nil, func(session.StreamStore) session.StreamStore { return s3 })
	}
}

// lastStream is the stream of session id's last turn.
func lastStream(e *env, id string) string {
	var stream string
	for _, f := range e.facts(id) {
		if f.Type == reducer.TurnStarted {
			stream = f.Stream
		}
	}
	return stream
}

// holdTool is a read tool whose calls each wait, once entered has told the
// test, until the test sends on release.
func holdTool(entered chan<- struct{}, release <-chan struct{}) tool.Tool {
	return tool.Tool{
		Name: "hold", Description: "Waits for the test.", Effect: tool.Read, Idempotent: true,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		Run: func(ctx context.Context, _ tool.Call) (json.RawMessage, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return json.RawMessage(`{"held":true}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
}

// heldStepWritten waits until the stream of the session's last turn holds
// steps billed steps: a read tool that runs past turn.BilledGrace has its
// step written ahead of its result. It fails the test if that never comes.
func heldStepWritten(t *testing.T, e *env, id string, steps int64) {
	t.Helper()
	stream := lastStream(e, id)
	for deadline := time.Now().Add(10 * time.Second); streamUsage(t, e, id, stream).Steps < steps; {
		if time.Now().After(deadline) {
			t.Fatalf("the stream never held %d billed steps while a read tool ran", steps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A running turn's usage, and the session's, count its completed steps as
// its stream holds them, cost included: in a first turn that has not
// suspended yet (whose recorded usage is zero), and in a resumed one
// whose last suspension recorded only some of them.
func TestSessionUsageCountsTheRunningTurnsStream(t *testing.T) {
	t.Parallel()
	counter := &awsenv.Counter{}
	e := newEmuEnv(t, countStreams(counter))
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Weather, then wait."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two two","toolCalls":[{"name":"hold","input":{}}]},
 {"text":"three three three","toolCalls":[{"name":"get_weather","input":{"city":"C"}}]},
 {"text":"four","toolCalls":[{"name":"get_weather","input":{"city":"D"}}]},
 {"text":"five five","toolCalls":[{"name":"hold","input":{}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	reg, err := tool.NewRegistry(append(tool.Demo(), holdTool(entered, release))...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024,
		Price: &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}, Limits: turn.Limits{MaxStepsPerInvocation: 3}}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	type result struct {
		out turn.Outcome
		err error
	}
	run := func(f func(context.Context, string) (turn.Outcome, error)) <-chan result {
		done := make(chan result, 1)
		go func() {
			out, err := f(t.Context(), s.ID)
			done <- result{out, err}
		}()
		return done
	}
	// midway waits for the hold tool, checks the view against the stream
	// (which has more steps than the facts recorded), lets the tool return
	// and waits for the invocation.
	midway := func(done <-chan result, recorded, wantSteps int64) turn.Outcome {
		t.Helper()
		select {
		case <-entered:
		case r := <-done:
			t.Fatalf("the invocation ended before the hold tool ran: %+v, %v", r.out, r.err)
		}
		heldStepWritten(t, e, s.ID, wantSteps)
		sess, err := e.store.Load(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sess.State.Turn == nil || sess.State.Turn.Usage.Steps != recorded || sess.State.Usage.Steps != recorded {
			t.Fatalf("the facts record %+v for the session and turn %+v, want %d steps", sess.State.Usage, sess.State.Turn, recorded)
		}
		var got api.Session
		counter.Reset()
		e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
		if got.Status != reducer.Running || got.Turn == nil {
			t.Fatalf("the session mid-turn is %q with turn %+v, want a running turn", got.Status, got.Turn)
		}
		// The view read the stream back from its end: one listing and a
		// GetObject of the last chunk, which holds the latest step.
		if c := counter.Counts(); c["s3:ListObjectsV2"] != 1 || c["s3:GetObject"] != 1 || counter.Total("s3:") != 2 {
			t.Fatalf("the view of a running turn made S3 requests %v, want one listing and one get", c)
		}
		want := streamUsage(t, e, s.ID, got.Turn.Stream)
		if want.Steps != wantSteps || want.InputTokens == 0 || want.OutputTokens == 0 || want.CostMicroUSD == 0 {
			t.Fatalf("stream usage mid-turn = %+v, want %d priced steps", want, wantSteps)
		}
		if got.Usage != want || got.Turn.Usage != want || got.UsageStale {
			t.Fatalf("mid-turn: session usage %+v, turn usage %+v, stale %v; want the stream's %+v",
				got.Usage, got.Turn.Usage, got.UsageStale, want)
		}
		release <- struct{}{}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.out
	}
	// The first turn, before it ever suspends: step one and its result,
	// and step two, are in the stream when step two's tool runs (a step is
	// written before its tools run).
	out := midway(run(runner.Start), 0, 2)
	if out.Kind != turn.Suspended || out.Steps != 3 {
		t.Fatalf("start: %+v", out)
	}
	// Resumed: the suspension recorded three steps, the stream has five.
	out = midway(run(runner.Resume), 3, 5)
	for out.Kind == turn.Suspended {
		if out, err = runner.Resume(t.Context(), s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if out.Kind != turn.Completed {
		t.Fatalf("resume: %+v", out)
	}
	var got api.Session
	counter.Reset()
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	// Loading the session reads the snapshot its turn left; the view reads
	// no stream.
	if c := counter.Counts(); c["s3:ListObjectsV2"] != 0 || c["s3:GetObject"] != 1 || counter.Total("s3:") != 1 {
		t.Fatalf("the view of an idle session made S3 requests %v, want only the snapshot's get", c)
	}
	want := streamUsage(t, e, s.ID, out.Turn)
	if want.Steps != 6 || want.CostMicroUSD == 0 || got.Usage != want || out.Usage != want || got.Turn != nil {
		t.Fatalf("after the turn: session %+v, outcome %+v, want the stream's %+v", got.Usage, out.Usage, want)
	}
}

// When the running turn's stream cannot be read, the view falls back to
// the usage the facts recorded and says so.
func TestSessionUsageFallsBackWhenTheStreamCannotBeRead(t *testing.T) {
	t.Parallel()
	ft := faults.New(nil)
	e := newEmuEnv(t, streamsThrough(ft))
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Weather, then wait."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two","toolCalls":[{"name":"hold","input":{}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	reg, err := tool.NewRegistry(append(tool.Demo(), holdTool(entered, release))...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	done := make(chan error, 1)
	go func() {
		_, err := runner.Start(t.Context(), s.ID)
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("the turn ended before the hold tool ran: %v", err)
	}
	heldStepWritten(t, e, s.ID, 2)
	ft.Set(faults.Rule{Op: "s3:ListObjectsV2", Fault: faults.SlowDown})
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	ft.Set()
	if ft.Count("s3:ListObjectsV2") == 0 {
		t.Fatal("no fault injected")
	}
	if got.Status != reducer.Running || !got.UsageStale || got.Usage != (reducer.Usage{}) || got.Turn == nil || got.Turn.Usage != (reducer.Usage{}) {
		t.Fatalf("with the stream unreadable: status %q, stale %v, usage %+v, turn %+v; want the recorded zero usage, stale",
			got.Status, got.UsageStale, got.Usage, got.Turn)
	}
	got = api.Session{}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.UsageStale || got.Usage.Steps != 2 {
		t.Fatalf("with the stream readable again: stale %v, usage %+v, want two steps (the second written before its tool runs)", got.UsageStale, got.Usage)
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSessionView measures GET /sessions/{id} of an idle session and
// of one whose first turn is running (blocked in a tool after one step),
// and reports the S3 requests each view makes.
func BenchmarkSessionView(b *testing.B) {
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "idle", true: "running"}[running]
		b.Run(name, func(b *testing.B) {
			counter := &awsenv.Counter{}
			e := newEmuEnv(b, countStreams(counter)) // counts S3 requests
			alice := ids.New("alice")
			s := e.create(alice)
			if running {
				e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Hold."}`})
				m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two","toolCalls":[{"name":"hold","input":{}}]},
 {"text":"done"}]}`))
				if err != nil {
					b.Fatal(err)
				}
				entered, release := make(chan struct{}), make(chan struct{})
				reg, err := tool.NewRegistry(append(tool.Demo(), holdTool(entered, release))...)
				if err != nil {
					b.Fatal(err)
				}
				agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024}
				runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
				done := make(chan error, 1)
				go func() {
					_, err := runner.Start(b.Context(), s.ID)
					done <- err
				}()
				<-entered
				defer func() {
					release <- struct{}{}
					if err := <-done; err != nil {
						b.Error(err)
					}
				}()
			}
			counter.Reset()
			for b.Loop() {
				var got api.Session
				e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(b, &got)
				if running && got.Usage.Steps != 1 {
					b.Fatalf("usage %+v, want one step", got.Usage)
				}
			}
			b.ReportMetric(float64(counter.Total("s3:"))/float64(b.N), "s3-requests/op")
		})
	}
}

// A running turn's usage is its latest step's metadata, however long its
// stream: here 300 one-step chunks. A stream written before steps said the
// turn's usage is summed when it is within what a view reads (64 chunks),
// and shown with its recorded usage, marked stale, beyond.
func TestSessionUsageOfALongStream(t *testing.T) {
	t.Parallel()
	step := reducer.Usage{InputTokens: 10, OutputTokens: 2, CostMicroUSD: 60}
	for _, c := range []struct {
		name   string
		chunks int
		old    bool // metadata without the turn's usage
		stale  bool
	}{{"300 chunks", 300, false, false}, {"old, 64 chunks", 64, true, false}, {"old, 65 chunks", 65, true, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			alice := ids.New("alice")
			s := e.create(alice)
			_, stream := e.startTurn(s.ID)
			sink := e.store.OpenStream(s.ID, stream)
			var so reducer.Usage
			for range c.chunks {
				so = so.Add(reducer.Usage{InputTokens: step.InputTokens, OutputTokens: step.OutputTokens, Steps: 1, CostMicroUSD: step.CostMicroUSD})
				meta := conversation.StepMetadata(step, so, "tool-calls")
				if c.old {
					meta = json.RawMessage(`{"usage":{"inputTokens":10,"outputTokens":2,"steps":1,"costMicroUSD":60},"finishReason":"tool-calls"}`)
				}
				for _, p := range []parts.Part{{Type: parts.StartStep},
					{Type: parts.MessageMetadata, MessageMetadata: meta},
					{Type: parts.FinishStep}} {
					if err := sink.Append(p); err != nil {
						t.Fatal(err)
					}
				}
				if err := sink.Flush(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			var got api.Session
			e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
			want := so
			if c.stale {
				want = reducer.Usage{}
			}
			if got.Status != reducer.Running || got.UsageStale != c.stale || got.Usage != want || got.Turn == nil || got.Turn.Usage != want {
				t.Fatalf("a running turn of %d chunks: status %q, stale %v, usage %+v, turn %+v; want stale %v, usage %+v",
					c.chunks, got.Status, got.UsageStale, got.Usage, got.Turn, c.stale, want)
			}
		})
	}
}

// A step marked abandoned after its metadata reached the stream does not
// count: the view takes the metadata of the last step kept.
func TestSessionUsageSkipsAnAbandonedStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	_, stream := e.startTurn(s.ID)
	sink := e.store.OpenStream(s.ID, stream)
	one := reducer.Usage{InputTokens: 10, OutputTokens: 2, Steps: 1}
	for _, p := range []parts.Part{
		{Type: parts.StartStep}, {Type: parts.MessageMetadata, MessageMetadata: conversation.StepMetadata(one, one, "tool-calls")}, {Type: parts.FinishStep},
		{Type: parts.StartStep}, {Type: parts.MessageMetadata, MessageMetadata: conversation.StepMetadata(one, one.Add(one), "tool-calls")},
		{Type: parts.DataAbandoned, Data: json.RawMessage(`{"reason":"cut"}`)},
	} {
		if err := sink.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Usage != one || got.UsageStale {
		t.Fatalf("usage %+v (stale %v), want the kept step's %+v", got.Usage, got.UsageStale, one)
	}
}

// A session's view counts its compactions, and its usage their summariser
// calls besides the steps.
func TestSessionViewCountsCompactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	answer, err := model.ParseScript([]byte(`{"steps":[{"text":"A long answer that fills the history of the session quickly, so that it must be compacted."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	summary, err := model.ParseScript([]byte(`{"steps":[{"text":"Earlier notes."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", Model: answer, Tools: reg,
		Compaction: &turn.Compaction{InputTokens: 120, KeepTurns: 1, Model: summary}}
	runner := &turn.Runner{Sessions: e.store, Agents: turn.AgentMap{agent.Name: agent}}
	var steps reducer.Usage
	for i := range 6 {
		e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice,
			body: `{"text":"Note ` + strconv.Itoa(i) + `: remember this one as well, please."}`})
		out, err := runner.Start(t.Context(), s.ID)
		if err != nil || out.Kind != turn.Completed {
			t.Fatalf("turn %d: %+v, %v", i, out, err)
		}
		steps = steps.Add(streamUsage(t, e, s.ID, out.Turn))
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	sess, err := e.store.Load(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Compactions == 0 || got.Compactions != sess.State.Compactions {
		t.Fatalf("view says %d compactions, the state %d", got.Compactions, sess.State.Compactions)
	}
	if got.Usage.InputTokens <= steps.InputTokens || got.Usage.Steps != steps.Steps {
		t.Fatalf("usage %+v: want the steps' %+v plus the summariser's tokens", got.Usage, steps)
	}
}

// A read that runs past turn.BilledGrace while S3 refuses writes: the
// billed step's write fails, and the invocation suspends as throttled
// without taking the read's result. The next invocation redoes the step
// (its parts never reached a flushed finish) and completes the turn; the
// stream holds only whole parts, and the session's usage is the stream's.
// (The refused step's own model call is not counted: nothing durable
// records it.)
func TestABilledWriteThatFailsDuringARead(t *testing.T) {
	t.Parallel()
	// The first writes of the turn's stream are the billed step's tries
	// (the SDK makes 3): they are refused; the writes after them land.
	ft := faults.New(nil, faults.Rule{Op: "s3:PutObject", Fault: faults.SlowDown, Times: 3})
	var store *session.Store // the runner's: its stream writes go through ft
	e := newEmuEnv(t, func(c *operator.Config) {
		streamsThrough(ft)(c)
		store = c.Sessions
	})
	alice := ids.New("alice")
	s := e.create(alice)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"Wait."}`})
	m, err := model.ParseScript([]byte(`{"steps":[
 {"text":"holding","toolCalls":[{"name":"hold","input":{}}]},
 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}, 2), make(chan struct{}, 2)
	reg, err := tool.NewRegistry(append(tool.Demo(), holdTool(entered, release))...)
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024,
		Price: &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}}
	runner := &turn.Runner{Sessions: store, Agents: turn.AgentMap{agent.Name: agent}}
	done := make(chan error, 1)
	go func() {
		out, err := runner.Start(t.Context(), s.ID)
		if err == nil && (out.Kind != turn.Suspended || out.Cause != reducer.CauseThrottled) {
			err = fmt.Errorf("the first invocation %+v, want suspended as throttled", out)
		}
		done <- err
	}()
	<-entered
	select {
	case err = <-done: // the billed write failed: the read's result is never taken
	case <-time.After(20 * time.Second):
		t.Fatal("the invocation went on after its billed write was refused")
	}
	ft.Set()
	if err != nil {
		t.Fatal(err)
	}
	if n := ft.Count("s3:PutObject"); n != 3 {
		t.Fatalf("%d writes refused, want the billed write's 3 tries", n)
	}
	release <- struct{}{} // the abandoned read returns
	release <- struct{}{} // the redone read's
	if out, err := runner.Resume(t.Context(), s.ID); err != nil || out.Kind != turn.Completed {
		t.Fatalf("the resume: %+v, %v", out, err)
	}
	stream := lastStream(e, s.ID)
	page, err := e.store.ReadStream(t.Context(), s.ID, stream, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range page.Entries {
		if en.Part.Type == "" {
			t.Fatalf("the stream holds a part with no type: %+v", en.Part)
		}
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Usage != streamUsage(t, e, s.ID, stream) {
		t.Fatalf("session usage %+v, want the stream's %+v", got.Usage, streamUsage(t, e, s.ID, stream))
	}
}
