package session

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

const fuzzSession = "s_019a2b3c4d5e6f0123456789abcdef"

// fuzzEnd is the fact that ends a turn and names its snapshot, and the
// snapshot End writes for it.
func fuzzEnd(tb testing.TB) (reducer.Fact, Snapshot) {
	tb.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	op := reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}
	ag := reducer.Actor{Kind: reducer.ActorAgent, ID: "turn_1"}
	key := "snapshots/" + fuzzSession + "/000000000004-0123456789abcdef.json"
	facts := []reducer.Fact{
		{Type: reducer.SessionCreated, Actor: op, Agent: "demo", Owner: "alice"},
		{Type: reducer.MessageReceived, Actor: op, Message: &reducer.Message{ID: "msg_1", Text: "weather in Paris?"}},
		{Type: reducer.TurnStarted, Actor: ag, Turn: "turn_1", Stream: "turn_1", Lease: t0.Add(15 * time.Minute)},
		{Type: reducer.TurnCompleted, Actor: ag, Turn: "turn_1", Usage: &reducer.Usage{InputTokens: 40, OutputTokens: 12}, Snapshot: key},
	}
	for i := range facts {
		facts[i].Seq, facts[i].Time = int64(i+1), t0.Add(time.Duration(i)*time.Second)
	}
	st, err := reducer.Reduce(facts)
	if err != nil {
		tb.Fatal(err)
	}
	msgs := []conversation.Message{
		{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "weather in Paris?"}}},
		{Role: conversation.Assistant, Content: []conversation.Content{
			{Type: conversation.Reasoning, Text: "use the tool", Signature: "sig"},
			{Type: conversation.ToolCall, ToolCallID: "call_1", ToolName: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolCallID: "call_1", Output: json.RawMessage(`{"temp":21}`)}}},
		{Role: conversation.Assistant, Content: []conversation.Content{{Type: conversation.Text, Text: "21°C"}}},
	}
	return facts[len(facts)-1], Snapshot{Session: fuzzSession, State: st, Messages: msgs}
}

// FuzzSnapshot decodes fuzzed snapshot bodies as Load does and checks them
// against the fact that names them. A snapshot is refused with an error
// matching ErrCorruptSnapshot, or holds an idle state the reducer can
// carry on from: a message and a new turn apply to it, and it says when it
// needs the tick without failing.
func FuzzSnapshot(f *testing.F) {
	end, snap := fuzzEnd(f)
	good, err := json.Marshal(snap)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, mut := range [][2]string{
		{`"status":"idle"`, `"status":"running"`},
		{`"status":"idle"`, `"status":"suspended"`},
		{`"lastSeq":4`, `"lastSeq":5`},
		{`"role":"user"`, `"role":"system"`},
		{`"type":"tool-call"`, `"type":"image"`},
		{`"session":"` + fuzzSession, `"session":"s_other`},
		{`"turns":1`, `"turns":0`},
		{`"agent":"demo"`, `"agent":""`},
	} {
		f.Add([]byte(strings.Replace(string(good), mut[0], mut[1], 1)))
	}
	f.Add([]byte(`null`))
	f.Add([]byte(`{"session":"` + fuzzSession + `","state":{"status":"running","lastSeq":4}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var sn Snapshot
		if json.Unmarshal(body, &sn) != nil {
			return // GetSnapshot reports the decoding error
		}
		if err := checkSnapshot(fuzzSession, end, sn); err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("checkSnapshot: %v, want ErrCorruptSnapshot", err)
			}
			return
		}
		st := sn.State
		st.Next(st.Updated, 0)
		t1 := st.Updated.Add(time.Second)
		next, err := st.Apply(
			reducer.Fact{Seq: st.LastSeq + 1, Type: reducer.MessageReceived, Time: t1, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"},
				Message: &reducer.Message{ID: "msg_fuzz", Text: "again"}},
			reducer.Fact{Seq: st.LastSeq + 2, Type: reducer.TurnStarted, Time: t1, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: "turn_fuzz"},
				Turn: "turn_fuzz", Stream: "turn_fuzz", Lease: t1.Add(time.Minute)},
		)
		if err != nil {
			t.Fatalf("an accepted snapshot's state %+v does not take a new turn: %v", st, err)
		}
		if n := next.Next(t1, 0); n.Reason != reducer.ReasonLease || !n.Due.Equal(t1.Add(time.Minute)) {
			t.Fatalf("what a new turn needs: %+v", n)
		}
	})
}
