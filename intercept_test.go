package baton_test

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// counts is what a counting interceptor saw.
type counts struct{ models, tools, steps, facts atomic.Int64 }

type countedLog struct {
	session.FactLog
	n *atomic.Int64
}

func (c countedLog) Append(ctx context.Context, id string, next reducer.State, facts ...reducer.Fact) error {
	err := c.FactLog.Append(ctx, id, next, facts...)
	if err == nil {
		c.n.Add(int64(len(facts)))
	}
	return err
}

func (c countedLog) AppendWithReceipt(ctx context.Context, id string, next reducer.State, rc *dynamo.Receipt, facts ...reducer.Fact) error {
	err := c.FactLog.AppendWithReceipt(ctx, id, next, rc, facts...)
	if err == nil {
		c.n.Add(int64(len(facts)))
	}
	return err
}

func (c *counts) interceptor() host.Interceptor {
	return host.Interceptor{
		Model: func(next intercept.ModelFunc) intercept.ModelFunc {
			return func(ctx context.Context, mc intercept.ModelCall) iter.Seq2[model.Event, error] {
				c.models.Add(1)
				return next(ctx, mc)
			}
		},
		Tool: func(next intercept.ToolFunc) intercept.ToolFunc {
			return func(ctx context.Context, tc intercept.ToolCall) ([]byte, error) {
				c.tools.Add(1)
				return next(ctx, tc)
			}
		},
		Step: func(next intercept.StepFunc) intercept.StepFunc {
			return func(ctx context.Context, s intercept.Step) ([]parts.Part, error) {
				c.steps.Add(1)
				return next(ctx, s)
			}
		},
		Facts: func(next session.FactLog) session.FactLog { return countedLog{next, &c.facts} },
	}
}

// TestConfigInterceptors: interceptors on host.Config see every model
// call, tool call and step of a turn that suspends for an approval and is
// resumed, and every fact of the session (its creation, the message, the
// approval and the turn's facts) goes through their fact log.
func TestConfigInterceptors(t *testing.T) {
	send := baton.Func("send", "Send a note.", func(context.Context, struct {
		To string `json:"to"`
	}) (string, error) {
		return "sent", nil
	}, baton.External(), baton.NeedsApproval())
	m, err := baton.Script([]byte(`{"steps":[
	 {"text":"Sending.","toolCalls":[{"name":"send","input":{"to":"ops"}}]},
	 {"text":"Sent."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var c counts
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "a", Model: m, Tools: []baton.Tool{send}}},
		Interceptors: []host.Interceptor{c.interceptor()}})
	s := kit.Session("a")
	s.Post("Send it.")
	if out := s.Run(); out.Kind != batontest.Suspended || len(s.Pending()) != 1 {
		t.Fatalf("first run: %+v, pending %+v; want suspended for one approval", out, s.Pending())
	}
	s.Approve(s.Pending()[0].ID)
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after approval: %+v", out)
	}
	starts, outputs := 0, 0
	for _, p := range s.Parts() {
		switch p.Type {
		case parts.StartStep:
			starts++
		case parts.ToolOutputAvailable:
			outputs++
		}
	}
	if starts != 2 || c.steps.Load() != 2 || c.models.Load() != 2 {
		t.Errorf("start-step parts %d, steps seen %d, model calls seen %d; want 2 each", starts, c.steps.Load(), c.models.Load())
	}
	if outputs != 1 || c.tools.Load() != 1 {
		t.Errorf("tool outputs %d, tool calls seen %d; want 1 each", outputs, c.tools.Load())
	}
	if n := len(s.Facts()); n == 0 || c.facts.Load() != int64(n) {
		t.Errorf("facts through the interceptor %d, the session's facts %d", c.facts.Load(), n)
	}
}
