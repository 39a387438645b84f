package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"reflect"
	"sync"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// checking is a model that, before each step, checks the input the runner
// built incrementally against a from-scratch conversation.Build of the
// session's durable state: its history and its open turn's stream, which
// holds every part emitted before the step (the checkpoint precedes it).
type checking struct {
	t     *testing.T
	m     model.Model
	inv   func() *invocation
	id    string
	mu    sync.Mutex
	steps int
}

func (c *checking) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	c.t.Helper()
	sess, err := c.inv().sessions.Load(ctx, c.id)
	if err != nil {
		c.t.Fatal(err)
	}
	tr := sess.State.Turn
	var ps []parts.Part
	if page, err := c.inv().sessions.ReadStream(ctx, c.id, tr.Stream, ""); err == nil {
		for _, e := range page.Entries {
			ps = append(ps, e.Part)
		}
	}
	want, _ := json.Marshal(conversation.Build(sess.History, tr.Messages, conversation.Replay(ps)))
	got, _ := json.Marshal(req.Messages)
	if !bytes.Equal(got, want) {
		c.t.Errorf("step input built incrementally:\n%s\nwant from scratch:\n%s", got, want)
	}
	c.mu.Lock()
	c.steps++
	c.mu.Unlock()
	return c.m.Stream(ctx, req)
}

// replaysAlike checks that folding a real stream part by part gives the
// turn Replay gives at every point, and the same model input.
func replaysAlike(t *testing.T, ps []parts.Part) {
	t.Helper()
	var r conversation.Replayer
	user := []reducer.Message{{ID: "m", Text: "go"}}
	for i, p := range ps {
		r.Add(p)
		want := conversation.Replay(ps[:i+1])
		if got := r.Turn(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after part %d (%s) the Replayer's turn differs from Replay's", i, p.Type)
		}
		got, _ := json.Marshal(r.Build(nil, user))
		exp, _ := json.Marshal(conversation.Build(nil, user, want))
		if !bytes.Equal(got, exp) {
			t.Fatalf("after part %d (%s): Build\n%s\nwant\n%s", i, p.Type, got, exp)
		}
	}
}

// Two turns of four steps each, two steps an invocation, every call under
// the same provider id: each step's input matches a fresh Build, across
// resumes and over the first turn's history.
func TestIncrementalInputMatchesBuildAcrossResumes(t *testing.T) {
	t.Parallel()
	const dupScript = `{"steps":[
 {"text":"first","toolCalls":[{"id":"dup","name":"get_weather","input":{"city":"A"}}]},
 {"text":"second","toolCalls":[{"id":"dup","name":"get_weather","input":{"city":"B"}},{"id":"tc_x","name":"get_weather","input":{"city":"C"}}]},
 {"reasoning":"hmm","text":"third","toolCalls":[{"id":"dup","name":"get_weather","input":{"city":"D"}}]},
 {"text":"done"}]}`
	ctx := ctxT(t)
	var inv *invocation
	m := &checking{t: t, m: script(t, dupScript), inv: func() *invocation { return inv }}
	agent := demoAgent(t, m, turn.Limits{MaxStepsPerInvocation: 2})
	inv = fresh(t, agent)
	m.id = newSession(t, inv, "go")
	for range 2 {
		out, err := inv.runner.Start(ctx, m.id)
		for err == nil && out.Kind == turn.Suspended {
			inv = fresh(t, agent)
			out, err = inv.runner.Resume(ctx, m.id)
		}
		if err != nil || out.Kind != turn.Completed || out.Usage.Steps != 4 {
			t.Fatalf("turn: %+v, %v", out, err)
		}
		ps, _ := readParts(t, inv, m.id, out.Turn)
		replaysAlike(t, ps)
		sess, err := inv.sessions.Load(ctx, m.id)
		if err != nil {
			t.Fatal(err)
		}
		msg := reducer.Message{ID: "again", Text: "again"}
		if _, err := inv.sessions.Append(ctx, m.id, sess.State, reducer.Fact{Type: reducer.MessageReceived, Actor: operator, Message: &msg}); err != nil {
			t.Fatal(err)
		}
	}
	if m.steps != 8 {
		t.Fatalf("the model was asked for %d steps, want 8", m.steps)
	}
}

// Approved and denied calls: the resumed run's input matches a fresh Build,
// and the streams replay alike part by part.
func TestIncrementalInputMatchesBuildAfterApprovals(t *testing.T) {
	t.Parallel()
	for _, d := range []reducer.Decision{reducer.Approve, reducer.Deny} {
		t.Run(string(d), func(t *testing.T) {
			ctx := ctxT(t)
			inv, id, ap := suspendOnApproval(t)
			if err := inv.sessions.Answer(ctx, id, operator, reducer.Answer{ApprovalID: ap.ID, Decision: d, Reason: ""}); err != nil {
				t.Fatal(err)
			}
			var rinv *invocation
			m := &checking{t: t, m: script(t, approvalScript), inv: func() *invocation { return rinv }, id: id}
			rinv = fresh(t, demoAgent(t, m, turn.Limits{}))
			out, err := rinv.runner.Resume(ctx, id)
			if err != nil || out.Kind != turn.Completed || m.steps != 1 {
				t.Fatalf("resume: %+v, %v (%d steps asked)", out, err, m.steps)
			}
			ps, _ := readParts(t, inv, id, out.Turn)
			replaysAlike(t, ps)
		})
	}
}
