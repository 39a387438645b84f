package operator_test

import (
	"context"
	"iter"
	"net/http"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// endingScript is a turn of a weather step, a step whose hold tool waits
// for the test, and an answer.
const endingScript = `{"steps":[
 {"text":"one","toolCalls":[{"name":"get_weather","input":{"city":"A"}}]},
 {"text":"two two","toolCalls":[{"name":"hold","input":{}}]},
 {"text":"done"}]}`

// endingRig is a session of alice's with an agent whose hold tool the test
// releases, priced so the steps cost something.
type endingRig struct {
	e                *env
	alice, id        string
	entered, release chan struct{}
	reg              *tool.Registry
}

func newEndingRig(t *testing.T) *endingRig {
	t.Helper()
	e := newEnv(t, nil)
	g := &endingRig{e: e, alice: ids.New("alice"), entered: make(chan struct{}), release: make(chan struct{})}
	g.id = e.create(g.alice).ID
	reg, err := tool.NewRegistry(append(tool.Demo(), holdTool(g.entered, g.release))...)
	if err != nil {
		t.Fatal(err)
	}
	g.reg = reg
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/messages", user: g.alice, body: `{"text":"Weather, then wait."}`})
	return g
}

// runner runs the agent of script with lim.
func (g *endingRig) runner(t *testing.T, script string, lim turn.Limits) *turn.Runner {
	t.Helper()
	m, err := model.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: g.reg, MaxTokens: 1024,
		Price: &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}, Limits: lim, Steering: g.e.store.SteeringOf("demo")}
	return &turn.Runner{Sessions: g.e.store, Agents: turn.AgentMap{agent.Name: agent}}
}

type ran struct {
	out turn.Outcome
	err error
}

// startHeld starts the turn with ctx and returns once its hold tool runs
// with its step (the second) written.
func (g *endingRig) startHeld(t *testing.T, ctx context.Context, r *turn.Runner) <-chan ran {
	t.Helper()
	done := g.startEntered(t, ctx, r)
	heldStepWritten(t, g.e, g.id, 2)
	return done
}

// startEntered starts the turn with ctx and returns once its hold tool
// runs, its step written or not.
func (g *endingRig) startEntered(t *testing.T, ctx context.Context, r *turn.Runner) <-chan ran {
	t.Helper()
	done := make(chan ran, 1)
	go func() {
		out, err := r.Start(ctx, g.id)
		done <- ran{out, err}
	}()
	select {
	case <-g.entered:
	case r := <-done:
		t.Fatalf("the invocation ended before the hold tool ran: %+v, %v", r.out, r.err)
	}
	return done
}

// finish releases the hold tool and waits for the invocation.
func (g *endingRig) finish(t *testing.T, done <-chan ran) turn.Outcome {
	t.Helper()
	g.release <- struct{}{}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.out
}

// billed is the sum of the step metadata in the session's only turn's
// stream: what the provider billed.
func (g *endingRig) billed(t *testing.T) reducer.Usage {
	t.Helper()
	return streamUsage(t, g.e, g.id, lastStream(g.e, g.id))
}

// agree checks that the session view and the listing say usage want.
func (g *endingRig) agree(t *testing.T, want reducer.Usage) api.Session {
	t.Helper()
	var got api.Session
	g.e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + g.id, user: g.alice}).json(t, &got)
	if got.Usage != want || got.UsageStale {
		t.Errorf("session view: usage %+v (stale %v), want the billed steps' %+v", got.Usage, got.UsageStale, want)
	}
	var list api.List
	g.e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: g.alice}).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != g.id || list.Sessions[0].Usage != want {
		t.Errorf("listing: %+v, want session %s with usage %+v", list.Sessions, g.id, want)
	}
	return got
}

// capsAgree checks that the session cap counts the billed steps: with the
// session's input-token cap set to exactly what was billed, the next step
// is refused before it runs.
func (g *endingRig) capsAgree(t *testing.T, want reducer.Usage, resume bool) {
	t.Helper()
	r := g.runner(t, `{"steps":[{"text":"more"}]}`, turn.Limits{Spend: turn.Spend{Session: reducer.Caps{InputTokens: want.InputTokens}}})
	run := r.Start
	if resume {
		run = r.Resume
		go func() { // the resumed turn first runs the call the dead invocation left
			<-g.entered
			g.release <- struct{}{}
		}()
	} else {
		g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/messages", user: g.alice, body: `{"text":"And more."}`})
	}
	out, err := run(t.Context(), g.id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseLimit || out.Steps != 0 {
		t.Errorf("with the session capped at the %d input tokens billed, the next run: %+v, %v; want a limit suspension before any step",
			want.InputTokens, out, err)
	}
}

// A cancel while the turn runs keeps the turn's usage and cost: the
// session's equal the step metadata its stream holds.
func TestCancelMidTurnKeepsTheStreamsUsage(t *testing.T) {
	t.Parallel()
	g := newEndingRig(t)
	done := g.startHeld(t, t.Context(), g.runner(t, endingScript, turn.Limits{}))
	g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/cancel", user: g.alice, body: `{}`})
	if out := g.finish(t, done); out.Kind != turn.Superseded {
		t.Fatalf("the cancelled invocation: %+v", out)
	}
	want := g.billed(t)
	if want.Steps == 0 || want.CostMicroUSD == 0 {
		t.Fatalf("the stream holds no billed step: %+v", want)
	}
	if got := g.agree(t, want); got.Last != reducer.TurnCancelled {
		t.Fatalf("the turn ended with %s, want cancelled", got.Last)
	}
}

// A cancel while a step's tool runs still leaves that step (the model call
// the provider billed) durable in the stream, and counted.
func TestCancelDuringAToolRunKeepsItsStep(t *testing.T) {
	t.Parallel()
	g := newEndingRig(t)
	done := g.startHeld(t, t.Context(), g.runner(t, endingScript, turn.Limits{}))
	g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/cancel", user: g.alice, body: `{}`})
	g.finish(t, done)
	want := g.billed(t)
	if want.Steps != 2 {
		t.Fatalf("the stream holds %d billed steps, want 2: the step whose tool ran when the turn was cancelled is lost", want.Steps)
	}
	g.agree(t, want)
}

// A cancel as soon as a step's read tool starts, before its step is written
// (within turn.BilledGrace), still counts that step: the stream has it, or,
// when the canceller closed the stream first, the cancelled invocation
// records it in a usage.recorded fact. Either way it is counted once.
func TestCancelBeforeAReadsStepIsWrittenCountsIt(t *testing.T) {
	t.Parallel()
	g := newEndingRig(t)
	done := g.startEntered(t, t.Context(), g.runner(t, endingScript, turn.Limits{}))
	g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/cancel", user: g.alice, body: `{}`})
	if out := g.finish(t, done); out.Kind != turn.Superseded {
		t.Fatalf("the cancelled invocation: %+v", out)
	}
	want := g.billed(t)
	recorded := 0
	for _, f := range g.e.facts(g.id) {
		if f.Type == reducer.UsageRecorded {
			recorded++
			want = want.Add(*f.Usage)
		}
	}
	t.Logf("the stream holds %d billed steps; %d usage.recorded facts", g.billed(t).Steps, recorded)
	if want.Steps != 2 || recorded > 1 {
		t.Fatalf("stream and usage.recorded count %d steps (%d facts), want the 2 the provider billed", want.Steps, recorded)
	}
	g.agree(t, want)
}

// Every ending keeps the turn's usage and cost equal to the sum of its
// billed steps, in the session view, the listing and the caps.
func TestEveryEndingKeepsItsBilledUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		end    func(t *testing.T, g *endingRig)
		last   reducer.Type
		resume bool // the turn stays open, suspended
	}{
		{"completed", func(t *testing.T, g *endingRig) {
			g.finish(t, g.startHeld(t, t.Context(), g.runner(t, endingScript, turn.Limits{})))
		}, reducer.TurnCompleted, false},
		{"failed", func(t *testing.T, g *endingRig) {
			g.finish(t, g.startHeld(t, t.Context(), g.runner(t, endingScript, turn.Limits{MaxStepsPerTurn: 2})))
		}, reducer.TurnFailed, false},
		{"cancelled", func(t *testing.T, g *endingRig) {
			done := g.startHeld(t, t.Context(), g.runner(t, endingScript, turn.Limits{}))
			g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/cancel", user: g.alice, body: `{}`})
			g.finish(t, done)
		}, reducer.TurnCancelled, false},
		{"interrupted", func(t *testing.T, g *endingRig) {
			g.e.store.Steering = func(string) reducer.Steering { return reducer.SteerInterrupt }
			done := g.startHeld(t, t.Context(), g.runner(t, endingScript, turn.Limits{}))
			g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/messages", user: g.alice, body: `{"text":"Stop, new plan."}`})
			g.finish(t, done)
			g.e.store.Steering = nil
		}, reducer.TurnInterrupted, false},
		{"reaped", func(t *testing.T, g *endingRig) {
			ctx, kill := context.WithCancel(t.Context())
			done := g.startHeld(t, ctx, g.runner(t, endingScript, turn.Limits{}))
			kill() // the invocation dies in the tool
			<-done
			tk := &tick.Tick{Sessions: g.e.store, Now: func() time.Time { return time.Now().Add(time.Hour) }}
			if rep, err := tk.Run(t.Context()); err != nil || rep.Reaped == 0 {
				t.Fatalf("tick: %+v, %v", rep, err)
			}
		}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newEndingRig(t)
			c.end(t, g)
			want := g.billed(t)
			if want.Steps == 0 || want.CostMicroUSD == 0 {
				t.Fatalf("no billed step: %+v", want)
			}
			got := g.agree(t, want)
			if got.Last != c.last {
				t.Fatalf("last ending %q, want %q", got.Last, c.last)
			}
			if c.resume && (got.Status != reducer.Suspended || got.Turn == nil || got.Turn.Cause != reducer.CauseLease || got.Turn.Usage != want) {
				t.Fatalf("reaped: status %q, turn %+v; want suspended for its lease with usage %+v", got.Status, got.Turn, want)
			}
			g.capsAgree(t, want, c.resume)
		})
	}
}

// gatedModel answers its first step only once the test releases it; its
// step bills 11 input and 4 output tokens.
type gatedModel struct{ entered, release chan struct{} }

func (m gatedModel) Stream(ctx context.Context, _ model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		m.entered <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
			return
		}
		if yield(model.Event{Type: model.TextDelta, Text: "too late"}, nil) {
			yield(model.Event{Type: model.Finish, Stop: model.StopEnd, Usage: model.Usage{InputTokens: 11, OutputTokens: 4}}, nil)
		}
	}
}

// A cancel while the model call runs: the step completes after the
// canceller closed the stream, so its chunk is refused; the invocation
// that finds its turn ended under it records the step's billed usage, and
// the session view, the listing and the caps count it.
func TestCancelDuringTheModelCallKeepsItsBilledUsage(t *testing.T) {
	t.Parallel()
	g := newEndingRig(t)
	m := gatedModel{entered: make(chan struct{}), release: make(chan struct{})}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: g.reg, MaxTokens: 1024,
		Price: &reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}}
	r := &turn.Runner{Sessions: g.e.store, Agents: turn.AgentMap{agent.Name: agent}}
	done := make(chan ran, 1)
	go func() {
		out, err := r.Start(t.Context(), g.id)
		done <- ran{out, err}
	}()
	<-m.entered
	g.e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + g.id + "/cancel", user: g.alice, body: `{}`})
	close(m.release)
	if res := <-done; res.err != nil || res.out.Kind != turn.Superseded {
		t.Fatalf("the cancelled invocation: %+v, %v", res.out, res.err)
	}
	step := reducer.Usage{InputTokens: 11, OutputTokens: 4, Steps: 1, CostMicroUSD: (&reducer.Price{InputPerMTok: 3, OutputPerMTok: 15}).Cost(11, 4)}
	want := g.billed(t).Add(step)
	g.agree(t, want)
	g.capsAgree(t, want, false)
}
