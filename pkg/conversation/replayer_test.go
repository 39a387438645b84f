package conversation_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// checkIncremental feeds ps to a Replayer one part at a time and, after
// each, checks that its Turn equals Replay of the parts so far and that its
// Build gives the same bytes as Build from scratch. Build is called after
// every part when every is set, else only at finish-steps (as the runner
// does), so both fresh and cached renderings are compared.
func checkIncremental(t *testing.T, hist []conversation.Message, user []reducer.Message, ps []parts.Part, every bool) {
	t.Helper()
	var r conversation.Replayer
	for i, p := range ps {
		r.Add(p)
		want := conversation.Replay(ps[:i+1])
		if got := r.Turn(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after part %d (%s): Replayer turn\n%s\nwant Replay\n%s", i, p.Type, dump(got), dump(want))
		}
		if got, exp := r.Pending(), want.Pending(); !reflect.DeepEqual(got, exp) {
			t.Fatalf("after part %d (%s): Replayer pending\n%s\nwant\n%s", i, p.Type, dump(got), dump(exp))
		}
		if !every && p.Type != parts.FinishStep && i != len(ps)-1 {
			continue
		}
		got, _ := json.Marshal(r.Build(hist, user))
		exp, _ := json.Marshal(conversation.Build(hist, user, want))
		if !bytes.Equal(got, exp) {
			t.Fatalf("after part %d (%s): Replayer.Build\n%s\nwant Build\n%s", i, p.Type, got, exp)
		}
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

var (
	testHist = []conversation.Message{
		{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "before"}}},
		{Role: conversation.Assistant, Content: []conversation.Content{{Type: conversation.ToolCall, ToolCallID: "h", ToolName: "t", Input: json.RawMessage(`{}`)}}},
		{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolCallID: "h", Output: json.RawMessage(`"ok"`)}}},
	}
	testUser = []reducer.Message{{ID: "m", Text: "go"}}
)

func TestReplayerMatchesReplay(t *testing.T) {
	var ps []parts.Part
	ps = append(ps, parts.Part{Type: parts.Start, MessageID: "turn_1"})
	// A message steered in before the first step, and one after it.
	ps = append(ps, steered("s0"))
	ps = append(ps, stepWithCall("A", "c1")...)
	ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(`{"t":1}`)})
	ps = append(ps, steered("s1", "s2"))
	// A partial step, abandoned, then redone.
	ps = append(ps, stepWithCall("B", "c2")[:5]...)
	ps = append(ps, parts.Part{Type: parts.DataAbandoned})
	ps = append(ps, stepWithCall("B", "c2")...)
	ps = append(ps,
		parts.Part{Type: parts.ToolApprovalRequest, ApprovalID: "ap1", ToolCallID: "c2"},
		parts.Part{Type: parts.DataSuspended},
		parts.Part{Type: parts.DataResumed},
		parts.Part{Type: parts.ToolApprovalResponse, ApprovalID: "ap1", Approved: yes()},
		parts.Part{Type: parts.ToolOutputDenied, ToolCallID: "c2"},
	)
	// A step cut short by a crash (no abandon marker), then the resume's.
	ps = append(ps, stepWithCall("C", "c3")[:7]...)
	ps = append(ps, parts.Part{Type: parts.DataAbandoned}, parts.Part{Type: parts.DataResumed})
	ps = append(ps, stepWithCall("C", "c3")...)
	ps = append(ps, parts.Part{Type: parts.ToolOutputError, ToolCallID: "c3", ErrorText: "boom"})
	// The first two steps summarised; a history compaction's part changes
	// nothing here.
	ps = append(ps, compacted(2, "A and B were done"),
		parts.Part{Type: parts.DataCompacted, Data: json.RawMessage(`{"turns":2,"messages":6,"kept":4,"before":900,"after":300}`)})
	// A late second result for an earlier step's call replaces the first.
	ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(`{"t":2}`)})
	ps = append(ps, steered("s3"))
	ps = append(ps, stepWithCall("D", "c4")[:4]...) // trailing partial step
	for _, every := range []bool{true, false} {
		checkIncremental(t, testHist, testUser, ps, every)
		checkIncremental(t, nil, testUser, ps, every)
	}
}

// A later call's baton id that an earlier call's provider id took changes
// the earlier call's wire id: the cached input must render anew.
func TestReplayerBuildFollowsLateWireIDChanges(t *testing.T) {
	var ps []parts.Part
	ps = append(ps, parts.Part{Type: parts.StartStep}, call("b0", "b1"), parts.Part{Type: parts.FinishStep},
		parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "b0", Output: json.RawMessage(`"0"`)})
	ps = append(ps, parts.Part{Type: parts.StartStep}, call("b1", "p"), parts.Part{Type: parts.FinishStep},
		parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "b1", Output: json.RawMessage(`"1"`)})
	checkIncremental(t, testHist, testUser, ps, false)
	var r conversation.Replayer
	r.Add(ps[:4]...)
	if got := r.Build(nil, testUser)[1].Content[0].ToolCallID; got != "b1" {
		t.Fatalf("first step's wire id = %q, want the provider's b1", got)
	}
	r.Add(ps[4:]...)
	if got := r.Build(nil, testUser)[1].Content[0].ToolCallID; got != "b0" {
		t.Fatalf("first step's wire id after b1 became a baton id = %q, want b0", got)
	}
}

// A Replayer asked to build on another history or other user messages
// starts over rather than reuse what it built.
func TestReplayerBuildOnOtherHistory(t *testing.T) {
	var ps []parts.Part
	ps = append(ps, stepWithCall("A", "c1")...)
	ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(`1`)})
	var r conversation.Replayer
	r.Add(ps...)
	r.Build(nil, testUser)
	hist := []conversation.Message{{Role: conversation.Assistant, Content: []conversation.Content{{Type: conversation.ToolCall, ToolCallID: "c1"}}}}
	got, _ := json.Marshal(r.Build(hist, testUser))
	exp, _ := json.Marshal(conversation.Build(hist, testUser, conversation.Replay(ps)))
	if !bytes.Equal(got, exp) {
		t.Fatalf("built on new history:\n%s\nwant\n%s", got, exp)
	}
	// Other user messages in a slice of the same start and length.
	user := []reducer.Message{{ID: "m", Text: "go"}}
	r.Build(hist, user)
	user[0].Text = "stop"
	got, _ = json.Marshal(r.Build(hist, user))
	exp, _ = json.Marshal(conversation.Build(hist, user, conversation.Replay(ps)))
	if !bytes.Equal(got, exp) {
		t.Fatalf("built for new user messages:\n%s\nwant\n%s", got, exp)
	}
}

// Random part sequences, including parts no runner writes (results for
// unknown calls, results before finish-step, repeated approvals), still
// replay alike one part at a time and all at once.
func TestReplayerMatchesReplayOnRandomStreams(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ps := randomStream(rng)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkIncremental(t, testHist, testUser, ps, seed%2 == 0)
		})
	}
}

func randomStream(rng *rand.Rand) []parts.Part {
	var ps []parts.Part
	calls := 0
	id := func() string { return fmt.Sprintf("b%d", rng.IntN(calls+2)) }
	providers := []string{"", "p", "q", "h", "b0", "b1", "b2", "b3"}
	for range 10 + rng.IntN(60) {
		switch k := rng.IntN(16); k {
		case 0, 1:
			ps = append(ps, parts.Part{Type: parts.StartStep})
		case 2:
			ps = append(ps, parts.Part{Type: parts.TextStart, ID: fmt.Sprint("t", rng.IntN(2))},
				parts.Part{Type: parts.TextDelta, ID: fmt.Sprint("t", rng.IntN(2)), Delta: "x"})
		case 3:
			r := fmt.Sprint("r", rng.IntN(2))
			ps = append(ps, parts.Part{Type: parts.ReasoningStart, ID: r}, parts.Part{Type: parts.ReasoningDelta, ID: r, Delta: "y"},
				parts.Part{Type: parts.ReasoningEnd, ID: r, ProviderMetadata: conversation.SignatureMetadata("s")})
		case 4, 5:
			ps = append(ps, call(fmt.Sprintf("b%d", calls), providers[rng.IntN(len(providers))]))
			calls++
		case 6:
			ps = append(ps, parts.Part{Type: parts.MessageMetadata, MessageMetadata: conversation.StepMetadata(reducer.Usage{InputTokens: 3, OutputTokens: 1}, reducer.Usage{}, "tool-calls")})
		case 7, 8:
			ps = append(ps, parts.Part{Type: parts.FinishStep})
		case 9:
			ps = append(ps, parts.Part{Type: parts.DataAbandoned})
		case 10:
			ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: id(), Output: json.RawMessage(fmt.Sprint(rng.IntN(9)))})
		case 11:
			ps = append(ps, parts.Part{Type: parts.ToolOutputError, ToolCallID: id(), ErrorText: "e"},
				parts.Part{Type: parts.ToolOutputDenied, ToolCallID: id()})
		case 12:
			ps = append(ps, parts.Part{Type: parts.ToolApprovalRequest, ToolCallID: id(), ApprovalID: fmt.Sprint("ap", rng.IntN(3))})
		case 13:
			ps = append(ps, parts.Part{Type: parts.ToolApprovalResponse, ApprovalID: fmt.Sprint("ap", rng.IntN(3)), Approved: yes()},
				parts.Part{Type: parts.DataSuspended}, parts.Part{Type: parts.DataResumed})
		case 14:
			ps = append(ps, steered(fmt.Sprint("s", len(ps))))
		case 15:
			// Applies only between steps, past the last summary, within the
			// steps there are.
			ps = append(ps, compacted(1+rng.IntN(4), fmt.Sprint("summary ", len(ps))))
		}
	}
	return ps
}

// compacted is a data-compacted part summarising the turn's first through
// steps as summary.
func compacted(through int, summary string) parts.Part {
	return parts.Part{Type: parts.DataCompacted, Data: conversation.TurnCompactedData(through, summary, 900, 300,
		reducer.Usage{InputTokens: 50, OutputTokens: 5})}
}

// steered is a data-steered part delivering messages of the ids given.
func steered(ids ...string) parts.Part {
	var msgs []reducer.Message
	for _, id := range ids {
		msgs = append(msgs, reducer.Message{ID: id, Text: "steer " + id})
	}
	return parts.Part{Type: parts.DataSteered, Data: conversation.SteeredData(msgs)}
}

// A steered message is a user message after the step before it, after that
// step's tool results; one steered in before the first step follows the
// turn's own message.
func TestSteeredMessagesRenderAsUserMessages(t *testing.T) {
	ps := []parts.Part{steered("s0")}
	ps = append(ps, stepWithCall("A", "c1")...)
	ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c1", Output: json.RawMessage(`1`)}, steered("s1"))
	tr := conversation.Replay(ps)
	var roles []string
	for _, m := range conversation.Build(nil, testUser, tr) {
		roles = append(roles, string(m.Role)+":"+m.Content[0].Text)
	}
	want := []string{"user:go", "user:steer s0", "assistant:think hard", "tool:", "user:steer s1"}
	if !reflect.DeepEqual(roles, want) {
		t.Fatalf("messages %v, want %v", roles, want)
	}
	var got []string
	for _, m := range tr.Delivered() {
		got = append(got, m.ID)
	}
	if !reflect.DeepEqual(got, []string{"s0", "s1"}) {
		t.Fatalf("delivered %v", got)
	}
	// A step with no calls and a steered message after it is not the end
	// of the turn: the model has something to answer.
	if last := tr.Last(); len(last.Steered) != 1 {
		t.Fatalf("last step steered %v", last.Steered)
	}
}

// A turn whose first steps were summarised renders the summary as a user
// message after its own, then the steps from there on; its usage counts
// the summariser's.
func TestTurnSummaryStandsForItsSteps(t *testing.T) {
	var ps []parts.Part
	for _, c := range []string{"A", "B", "C"} {
		ps = append(ps, stepWithCall(c, "c"+c)...)
		ps = append(ps, parts.Part{Type: parts.ToolOutputAvailable, ToolCallID: "c" + c, Output: json.RawMessage(`1`)})
	}
	ps = append(ps, compacted(2, "A and B were done"))
	tr := conversation.Replay(ps)
	var got []string
	for _, m := range conversation.Build(nil, testUser, tr) {
		got = append(got, string(m.Role))
		if m.Role == conversation.User {
			got[len(got)-1] += ":" + m.Content[0].Text
		}
	}
	want := []string{"user:go", "user:" + conversation.TurnSummaryPrefix + "A and B were done", "assistant", "tool"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
	var steps reducer.Usage
	for _, st := range tr.Steps {
		steps = steps.Add(st.Usage)
	}
	if u := tr.Usage(); u.Steps != 3 || u.InputTokens != steps.InputTokens+50 || u.OutputTokens != steps.OutputTokens+5 {
		t.Fatalf("usage %+v: want 3 steps, theirs %+v and the summariser's tokens", u, steps)
	}
	// A later summary must reach further; an earlier or a too long one is
	// ignored.
	for _, p := range []parts.Part{compacted(1, "older"), compacted(9, "beyond")} {
		if again := conversation.Replay(append(ps[:len(ps):len(ps)], p)); again.Summary != "A and B were done" || again.Through != 2 {
			t.Fatalf("after %s: summary %q through %d", p.Data, again.Summary, again.Through)
		}
	}
}

// A step's metadata says steps 1; a turn's usage counts each step once,
// also in streams written before the metadata said so.
func TestStepUsageCountsEachStepOnce(t *testing.T) {
	var m struct {
		Usage reducer.Usage `json:"usage"`
	}
	if err := json.Unmarshal(conversation.StepMetadata(reducer.Usage{InputTokens: 10, OutputTokens: 2}, reducer.Usage{InputTokens: 10, OutputTokens: 2, Steps: 1}, "stop"), &m); err != nil || m.Usage.Steps != 1 {
		t.Fatalf("step metadata usage = %+v, %v", m.Usage, err)
	}
	old := parts.Part{Type: parts.MessageMetadata, MessageMetadata: json.RawMessage(`{"usage":{"inputTokens":5,"outputTokens":1,"steps":0}}`)}
	ps := append(stepWithCall("A", "c1"), parts.Part{Type: parts.StartStep}, old, parts.Part{Type: parts.FinishStep})
	if got, want := conversation.Replay(ps).Usage(), (reducer.Usage{InputTokens: 15, OutputTokens: 3, Steps: 2}); got != want {
		t.Fatalf("turn usage = %+v, want %+v", got, want)
	}
}

// A Replayer's turn keeps its steps' usage as they finish; it is the sum a
// turn built from the same steps computes, and a step cut short (never
// finished) does not count.
func TestReplayerTurnUsageIsTheStepsSum(t *testing.T) {
	var r conversation.Replayer
	for i := range 5 {
		step, total := reducer.Usage{InputTokens: int64(10 * (i + 1)), OutputTokens: int64(i + 1), CostMicroUSD: 7}, reducer.Usage{}
		r.Add(parts.Part{Type: parts.StartStep},
			parts.Part{Type: parts.MessageMetadata, MessageMetadata: conversation.StepMetadata(step, total, "stop")},
			parts.Part{Type: parts.FinishStep})
	}
	r.Add(parts.Part{Type: parts.StartStep},
		parts.Part{Type: parts.MessageMetadata, MessageMetadata: conversation.StepMetadata(reducer.Usage{InputTokens: 1000}, reducer.Usage{}, "stop")})
	got := r.Turn().Usage()
	want := conversation.Turn{Steps: r.Turn().Steps}.Usage()
	if got != want || got != (reducer.Usage{InputTokens: 150, OutputTokens: 15, CostMicroUSD: 35, Steps: 5}) {
		t.Fatalf("replayer's usage %+v, the steps' sum %+v", got, want)
	}
}
