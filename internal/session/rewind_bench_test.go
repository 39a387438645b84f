package session_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// BenchmarkFork forks a session of 20 ended turns (each a tool step and a
// text step) at the end of turn 10, and within turn 10 after its first
// step, on the emulator, and reports the store requests of each fork.
func BenchmarkFork(b *testing.B) {
	var counter awsenv.Counter
	c := awsenv.Counted(env.URL(), &counter)
	s := session.New(dynamo.New(c.DynamoDB, env.Table), streams.New(c.S3, env.Bucket))
	ctx := b.Context()
	id := ids.New("s")
	if _, err := s.Create(ctx, id, "alice", "demo"); err != nil {
		b.Fatal(err)
	}
	var turns []string
	for i := range 20 {
		sess, err := s.Load(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		turn := ids.New("turn")
		agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
		call := fmt.Sprintf("call_%d", i)
		if _, err := s.Append(ctx, id, sess.State,
			reducer.Fact{Type: reducer.MessageReceived, Actor: alice, Message: &reducer.Message{ID: ids.New("msg"), Text: fmt.Sprintf("question %d", i)}},
			reducer.Fact{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn}); err != nil {
			b.Fatal(err)
		}
		ps := []parts.Part{{Type: parts.Start}, {Type: parts.StartStep},
			{Type: parts.ToolInputAvailable, ToolCallID: call, ToolName: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)},
			{Type: parts.FinishStep}, {Type: parts.ToolOutputAvailable, ToolCallID: call, Output: json.RawMessage(`"sunny"`)},
			{Type: parts.StartStep}, {Type: parts.TextStart, ID: "t"}, {Type: parts.TextDelta, ID: "t", Delta: "Sunny in Oslo."},
			{Type: parts.TextEnd, ID: "t"}, {Type: parts.FinishStep}}
		sink := s.OpenStream(id, turn)
		if err := sink.Append(ps...); err != nil {
			b.Fatal(err)
		}
		if err := sink.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if sess, err = s.Load(ctx, id); err != nil {
			b.Fatal(err)
		}
		if _, err := s.End(ctx, sess, conversation.Replay(ps), reducer.Fact{Type: reducer.TurnCompleted, Actor: agent, Turn: turn}); err != nil {
			b.Fatal(err)
		}
		turns = append(turns, turn)
	}
	one := 1
	for _, c := range []struct {
		name  string
		point reducer.Point
	}{
		{"end", reducer.Point{Turn: turns[9]}},
		{"step", reducer.Point{Turn: turns[9], Step: &one}},
	} {
		b.Run(c.name, func(b *testing.B) {
			counter.Reset()
			n := 0
			for b.Loop() {
				if _, err := s.Fork(ctx, id, ids.New("s"), alice, c.point, false); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(counter.Total("dynamodb:"))/float64(n), "dynamodb-req/op")
			b.ReportMetric(float64(counter.Total("s3:"))/float64(n), "s3-req/op")
		})
	}
}
