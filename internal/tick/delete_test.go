package tick_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// gate counts calls and holds each until the test lets it go.
type gate struct {
	calls   atomic.Int32
	began   chan int32
	release chan struct{}
}

func newGate() *gate { return &gate{began: make(chan int32, 100), release: make(chan struct{}, 100)} }

// pass holds the caller until the test releases it, or ctx ends.
func (g *gate) pass(ctx context.Context) error {
	g.began <- g.calls.Add(1)
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitBegan waits for call n to begin.
func (g *gate) waitBegan(t *testing.T, n int32) {
	t.Helper()
	select {
	case got := <-g.began:
		if got != n {
			t.Fatalf("call %d began, want %d", got, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("call %d never began", n)
	}
}

// gatedModel is a model each of whose calls passes the gate first.
type gatedModel struct {
	model.Model
	g *gate
}

func (m gatedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if err := m.g.pass(ctx); err != nil {
			yield(model.Event{}, err)
			return
		}
		for ev, err := range m.Model.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// probeAgent is an agent whose every step calls the read tool "probe",
// twenty times, with its model and its tool behind their gates.
func probeAgent(t *testing.T, mg, tg *gate) *turn.Agent {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"steps":[`)
	for i := range 20 {
		fmt.Fprintf(&b, `{"text":"probe %d","toolCalls":[{"name":"probe","input":{}}]},`, i)
	}
	b.WriteString(`{"text":"done"}]}`)
	reg, err := tool.NewRegistry(tool.Tool{Name: "probe", Description: "Read something.", Effect: tool.Read, Idempotent: true,
		Schema: json.RawMessage(`{"type":"object"}`),
		Run: func(ctx context.Context, _ tool.Call) (json.RawMessage, error) {
			if err := tg.pass(ctx); err != nil {
				return nil, err
			}
			return json.RawMessage(`{"ok":true}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return &turn.Agent{Name: "demo", System: "You probe.", Model: gatedModel{script(t, b.String()), mg}, Tools: reg, MaxTokens: 1024}
}

// TestCancelAndDeleteStopTheRunningInvocation: an operator cancels a
// running turn and deletes its session at once, while the invocation
// running it waits for the model (the reads of the step the model is
// answering would run before the step's checkpoint tells it), or while a
// read runs (its checkpoint would land again, the cancel's close having
// been purged). Either way the invocation calls no tool and no model
// after the delete, and writes nothing: right after the delete the
// session's objects are the cancel's close alone (a finish part, nothing
// of the conversation), and once the invocation's lease has passed, the
// tick finishes the delete: only the purged tombstone remains.
func TestCancelAndDeleteStopTheRunningInvocation(t *testing.T) {
	t.Parallel()
	for _, during := range []string{"model", "read"} {
		t.Run("during the "+during, func(t *testing.T) {
			ctx := ctxT(t)
			s := newEmuStack(t)
			mg, tg := newGate(), newGate()
			inv := s.fresh(probeAgent(t, mg, tg))
			id := newSession(t, inv, "Probe.")
			done := make(chan turn.Outcome, 1)
			go func() {
				out, err := inv.runner.Start(ctx, id)
				if err != nil {
					t.Errorf("the cancelled run: %v", err)
				}
				done <- out
			}()
			mg.waitBegan(t, 1)
			if during == "read" {
				mg.release <- struct{}{}
				tg.waitBegan(t, 1)
			}
			op := s.fresh(nil)
			lease := stateOf(t, op, id).Turn.Lease
			if err := op.sessions.Cancel(ctx, id, alice, "stop"); err != nil {
				t.Fatal(err)
			}
			if err := op.sessions.Delete(ctx, id, alice.ID, alice.ID); err != nil {
				t.Fatal(err)
			}
			models, tools := mg.calls.Load(), tg.calls.Load()
			for range 100 { // whatever the invocation asks for from now on runs
				mg.release <- struct{}{}
				tg.release <- struct{}{}
			}
			select {
			case out := <-done:
				if out.Kind != turn.Superseded {
					t.Errorf("the cancelled run ended %s, want superseded", out.Kind)
				}
			case <-ctx.Done():
				t.Fatal("the cancelled run never stopped")
			}
			if m, tl := mg.calls.Load(), tg.calls.Load(); m != models || tl != tools {
				t.Errorf("after the delete: %d model calls and %d tool calls, want none", m-models, tl-tools)
			}
			items, objects := s.leftOf(t, id)
			if len(items) != 1 || len(objects) != 1 {
				t.Fatalf("right after the delete: items %v objects %v, want the tombstone and the cancel's close", items, objects)
			}
			body := s.object(t, objects[0])
			if !strings.Contains(body, `"finish"`) || strings.Contains(body, "probe") {
				t.Errorf("the fence left in the bucket holds %s, want only the cancel's finish", body)
			}

			// The tick, before the lease has passed and after.
			early := s.fresh(nil)
			early.sessions.Now, early.tick.Now = at(time.Until(lease)-time.Second), at(time.Until(lease)-time.Second)
			if rep, err := early.tick.Run(ctx); err != nil || rep.Purged != 0 {
				t.Fatalf("tick within the lease: %+v, %v; want nothing purged", rep, err)
			}
			later := s.fresh(nil)
			later.sessions.Now, later.tick.Now = at(time.Until(lease)+time.Second), at(time.Until(lease)+time.Second)
			if rep, err := later.tick.Run(ctx); err != nil || rep.Purged != 1 {
				t.Fatalf("tick past the lease: %+v, %v; want the delete finished", rep, err)
			}
			if items, objects := s.leftOf(t, id); len(items) != 1 || items[0] != id+"/-2" || len(objects) != 0 {
				t.Fatalf("after the tick: items %v objects %v, want only the tombstone", items, objects)
			}
			tomb, err := dynamo.New(s.Clients().DynamoDB, s.Table).Tombstone(ctx, id)
			if err != nil || !tomb.Purged {
				t.Fatalf("tombstone %+v, %v; want it purged", tomb, err)
			}
			if rep, err := later.tick.Run(ctx); err != nil || rep.Purged != 0 || rep.Seen != 0 {
				t.Fatalf("the next tick: %+v, %v; want nothing left due", rep, err)
			}
		})
	}
}

// stateOf loads session id's state.
func stateOf(t *testing.T, inv *invocation, id string) reducer.State {
	t.Helper()
	sess, err := inv.sessions.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.State
}

// object reads the bucket's object at key.
func (s *stack) object(t *testing.T, key string) string {
	t.Helper()
	out, err := s.Clients().S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
